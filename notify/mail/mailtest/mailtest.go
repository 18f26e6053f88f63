// Package mailtest runs a real SMTP server in the test's process
// (emersion/go-smtp on 127.0.0.1, a free port) that records every message
// it accepts, so tests send real SMTP without an outside mail server.
package mailtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte // the message as received: headers and MIME body
	User string // the authenticated user, or ""
}

// Options configure the server.
type Options struct {
	// Username and Password, when set, make AUTH PLAIN required: the
	// server refuses MAIL FROM before a successful login.
	Username, Password string
	// RejectRcpt, when set, is the reply to every RCPT TO (a failing
	// server); nil accepts. SetRejectRcpt changes it while the server runs.
	RejectRcpt *smtp.SMTPError
}

// Server is a running SMTP server, stopped when the test ends.
type Server struct {
	Addr string // 127.0.0.1:port
	opts Options

	mu      sync.Mutex
	msgs    []Message
	changed chan struct{} // closed and replaced on each message
}

// Start starts a server on 127.0.0.1:0.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mailtest: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String(), opts: opts, changed: make(chan struct{})}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true // plain TCP on loopback
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	tb.Cleanup(func() { srv.Close(); <-done })
	return s
}

// URL is the server's SMTP_URL (smtp://, with the credentials when set).
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr}
	if s.opts.Username != "" {
		u.User = url.UserPassword(s.opts.Username, s.opts.Password)
	}
	return u.String()
}

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Messages returns the messages received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait returns the messages once there are at least n, or fails the test
// when ctx ends first.
func (s *Server) Wait(ctx context.Context, tb testing.TB, n int) []Message {
	tb.Helper()
	for {
		s.mu.Lock()
		msgs, changed := append([]Message(nil), s.msgs...), s.changed
		s.mu.Unlock()
		if len(msgs) >= n {
			return msgs
		}
		select {
		case <-changed:
		case <-ctx.Done():
			tb.Fatalf("mailtest: %d messages received, want %d: %v", len(msgs), n, ctx.Err())
		}
	}
}

// SetRejectRcpt sets the reply to every RCPT TO from now on; nil accepts.
func (s *Server) SetRejectRcpt(e *smtp.SMTPError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.RejectRcpt = e
}

func (s *Server) record(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	close(s.changed)
	s.changed = make(chan struct{})
}

// session is one SMTP connection's transaction.
type session struct {
	s    *Server
	user string
	msg  Message
}

var errAuth = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "invalid credentials"}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain || ss.s.opts.Username == "" {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return errAuth
		}
		ss.user = username
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.msg = Message{From: from, User: ss.user}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	reject := ss.s.opts.RejectRcpt
	ss.s.mu.Unlock()
	if reject != nil {
		return reject
	}
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	if len(ss.msg.To) == 0 {
		return errors.New("no recipient")
	}
	ss.msg.Data = b.Bytes()
	ss.s.record(ss.msg)
	ss.msg = Message{}
	return nil
}

func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }

// String describes a message for failure output.
func (m Message) String() string {
	return fmt.Sprintf("from %s to %v (%d bytes)", m.From, m.To, len(m.Data))
}
