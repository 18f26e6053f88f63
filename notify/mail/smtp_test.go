package mail_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/notify/mail"
	"github.com/partnertrack/partnertrack/notify/mail/mailtest"
)

func TestParseSMTPURL(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want mail.SMTPConfig
	}{
		{"smtp://mail.example.com", mail.SMTPConfig{Host: "mail.example.com", Port: 587}},
		{"smtp://user:p%40ss@mail.example.com:2525", mail.SMTPConfig{Host: "mail.example.com", Port: 2525, Username: "user", Password: "p@ss"}},
		{"smtps://u:p@mail.example.com", mail.SMTPConfig{Host: "mail.example.com", Port: 465, Username: "u", Password: "p", ImplicitTLS: true}},
		{"smtp://[::1]:25/", mail.SMTPConfig{Host: "::1", Port: 25}},
	} {
		got, err := mail.ParseSMTPURL(tc.raw)
		if err != nil || got != tc.want {
			t.Errorf("ParseSMTPURL(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
	for _, raw := range []string{"", "mail.example.com:25", "http://mail.example.com", "smtp://", "smtp://:pass@host",
		"smtp://host:0", "smtp://host:99999", "smtp://host:x", "smtp://host/path", "smtp://host?tls=1", "smtp:host"} {
		if c, err := mail.ParseSMTPURL(raw); err == nil {
			t.Errorf("ParseSMTPURL(%q) = %+v, want an error", raw, c)
		}
	}
}

func TestSMTPMailerDelivers(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{Username: "mailer", Password: "s3cret"})
	cfg, err := mail.ParseSMTPURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.NewSMTPMailer(cfg, "Acme Partners <partners@acme.example>")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sent := mail.Message{
		To:        "ann@example.com",
		Subject:   "Welcome to Acmé",
		Text:      "Hello Ann,\nwelcome.",
		HTML:      "<p>Hello Ann,</p><p>welcome.</p>",
		MessageID: "outbox-42@partnertrack",
	}
	if err := m.Send(ctx, sent); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("server received %v, want one message", got)
	}
	if got[0].From != "partners@acme.example" || len(got[0].To) != 1 || got[0].To[0] != "ann@example.com" || got[0].User != "mailer" {
		t.Fatalf("envelope = %+v, want from partners@acme.example to ann@example.com as user mailer", got[0])
	}
	parsed, err := got[0].Parse()
	if err != nil {
		t.Fatalf("%v\n%s", err, got[0].Data)
	}
	if parsed.Subject != sent.Subject || parsed.To != "<ann@example.com>" || parsed.MessageID != "<outbox-42@partnertrack>" {
		t.Errorf("headers: subject %q, to %q, message-id %q", parsed.Subject, parsed.To, parsed.MessageID)
	}
	if parsed.Text != sent.Text || parsed.HTML != sent.HTML {
		t.Errorf("parts: text %q, html %q; want %q, %q", parsed.Text, parsed.HTML, sent.Text, sent.HTML)
	}
}

func TestSMTPMailerReportsRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := mail.Message{To: "ann@example.com", Subject: "s", Text: "t", MessageID: "outbox-1@partnertrack"}

	srv := mailtest.Start(t, mailtest.Options{Username: "mailer", Password: "s3cret"})
	wrong := mail.SMTPConfig{Host: "127.0.0.1", Port: srv.Port(), Username: "mailer", Password: "wrong"}
	m, err := mail.NewSMTPMailer(wrong, mail.DefaultFrom)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(ctx, msg); err == nil || len(srv.Messages()) != 0 {
		t.Fatalf("send with a wrong password: err %v, %d messages; want an error and none", err, len(srv.Messages()))
	}

	unauth := mail.SMTPConfig{Host: "127.0.0.1", Port: srv.Port()}
	if m, err = mail.NewSMTPMailer(unauth, mail.DefaultFrom); err != nil {
		t.Fatal(err)
	}
	if err := m.Send(ctx, msg); err == nil || len(srv.Messages()) != 0 {
		t.Fatalf("send without login to a server that requires it: err %v; want an error", err)
	}

	if _, err := mail.NewSMTPMailer(unauth, "not an address"); err == nil {
		t.Fatal("a malformed sender accepted")
	}
}

func TestLogMailerLogsAndSendsNothing(t *testing.T) {
	var buf bytes.Buffer
	m := mail.LogMailer{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	err := m.Send(context.Background(), mail.Message{To: "ann@example.com", Subject: "Your invite",
		Text: "secret-link-text", HTML: "<a href=x>secret-link-html</a>", MessageID: "outbox-7@partnertrack"})
	if err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, want := range []string{"level=INFO", "to=ann@example.com", `subject="Your invite"`, "message_id=outbox-7@partnertrack"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "secret-link") {
		t.Errorf("log line %q holds the body", line)
	}
}
