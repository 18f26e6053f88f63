package mail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultFrom is the sender when SMTP_FROM is unset.
const DefaultFrom = "partnertrack <no-reply@localhost>"

// SMTPConfig is a parsed SMTP_URL.
type SMTPConfig struct {
	Host     string
	Port     int
	Username string
	Password string
	// ImplicitTLS is smtps://: TLS from the first byte. Otherwise the
	// client uses STARTTLS when the server offers it.
	ImplicitTLS bool
}

// ParseSMTPURL parses smtp://[user:pass@]host[:port] (STARTTLS when the
// server offers it, port 587 by default) or smtps://[user:pass@]host[:port]
// (implicit TLS, port 465 by default).
func ParseSMTPURL(raw string) (SMTPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTPConfig{}, errors.New("not a URL")
	}
	var c SMTPConfig
	switch u.Scheme {
	case "smtp":
		c.Port = 587
	case "smtps":
		c.Port, c.ImplicitTLS = 465, true
	default:
		return SMTPConfig{}, errors.New("scheme must be smtp or smtps")
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return SMTPConfig{}, errors.New("must be scheme://[user:pass@]host[:port] with nothing after the host")
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return SMTPConfig{}, errors.New("host is missing")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return SMTPConfig{}, errors.New("port must be from 1 to 65535")
		}
		c.Port = n
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
		if c.Username == "" {
			return SMTPConfig{}, errors.New("user is empty")
		}
	}
	return c, nil
}

// Addr is host:port.
func (c SMTPConfig) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// sendTimeout bounds one connection's dial and commands.
const sendTimeout = 30 * time.Second

// SMTPMailer sends messages through one SMTP server with go-mail, one
// connection per message (emails are few; a pooled connection would need
// keeping alive).
type SMTPMailer struct {
	cfg  SMTPConfig
	from string
}

// NewSMTPMailer returns a mailer for the server and sender (an address,
// with or without a display name).
func NewSMTPMailer(cfg SMTPConfig, from string) (*SMTPMailer, error) {
	if cfg.Host == "" || cfg.Port == 0 {
		return nil, errors.New("mail: SMTP host and port are required")
	}
	if err := gomail.NewMsg().From(from); err != nil {
		return nil, fmt.Errorf("mail: sender %q: %v", from, err)
	}
	return &SMTPMailer{cfg: cfg, from: from}, nil
}

// Send implements Mailer: a multipart/alternative message (text, then
// HTML) with the message's Message-ID.
func (s *SMTPMailer) Send(ctx context.Context, m Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mail: from: %v", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail: to: %v", err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	if m.MessageID != "" {
		msg.SetMessageIDWithValue(m.MessageID)
	} else {
		msg.SetMessageID()
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	client, err := gomail.NewClient(s.cfg.Host, s.options()...)
	if err != nil {
		return fmt.Errorf("mail: client: %v", err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("mail: send to %s via %s: %w", m.To, s.cfg.Addr(), err)
	}
	return nil
}

// options configures the client: the port, TLS (implicit, or STARTTLS
// when offered) and, with a user, AUTH PLAIN, which go-mail sends only
// over TLS or to localhost.
func (s *SMTPMailer) options() []gomail.Option {
	opts := []gomail.Option{gomail.WithPort(s.cfg.Port), gomail.WithTimeout(sendTimeout)}
	if s.cfg.ImplicitTLS {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthPlain),
			gomail.WithUsername(s.cfg.Username), gomail.WithPassword(s.cfg.Password))
	} else {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthNoAuth))
	}
	return opts
}
