package notify_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/notify"
)

// TestSenderLogsGenericReasons delivers to real receivers that fail in
// each way a network fails (a closed port, a receiver that never answers,
// a certificate nobody signed, an address the guard refuses, an error
// status) and reads the delivery log brand admins see: each attempt shows
// a generic reason, never the resolved address, port or the Go error.
func TestSenderLogsGenericReasons(t *testing.T) {
	b := setup(t)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()

	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	t.Cleanup(func() { close(hang); slow.Close() })
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	selfSigned.StartTLS()
	t.Cleanup(selfSigned.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(failing.Close)

	for _, tc := range []struct {
		desc, url, reason string
		guard             *notify.Guard
		timeout           time.Duration // only the hanging receiver needs it to run out
	}{
		{"ConnectionRefused", closedURL, "connection refused", nil, time.Minute},
		{"Timeout", slow.URL + "/hook", "timeout", nil, 300 * time.Millisecond},
		{"TLSError", selfSigned.URL + "/hook", "TLS error", nil, time.Minute},
		{"BlockedAddress", failing.URL + "/hook", "blocked address", &notify.Guard{}, time.Minute},
		{"Status", failing.URL + "/hook", "receiver answered HTTP 503", nil, time.Minute},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := b.sender(notify.SenderConfig{Guard: tc.guard, Timeout: tc.timeout})
			e := b.MustEndpoint(t, tc.url)
			if err := s.Deliver(context.Background(), message(e.ID), 1); err == nil {
				t.Fatal("delivered")
			}
			log := b.attempts(t, e.ID)
			if len(log) != 1 || log[0].Error != tc.reason {
				t.Fatalf("delivery log %+v, want one attempt with reason %q", log, tc.reason)
			}
		})
	}
}

// TestReason maps errors that need no network to their reasons.
func TestReason(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		err    error
		reason string
	}{
		{"None", nil, ""},
		{"Deadline", context.DeadlineExceeded, "timeout"},
		{"Certificate", &tls.CertificateVerificationError{}, "TLS error"},
		{"NoSuchHost", &net.DNSError{Err: "no such host", Name: "hook.brand.example", Server: "10.0.0.2:53", IsNotFound: true}, "host not found"},
		{"Status", &notify.StatusError{Code: 410}, "receiver answered HTTP 410"},
		{"Unknown", &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "odd", Addr: "10.9.8.7"}}, "connection failed"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := notify.Reason(tc.err)
			if got != tc.reason || strings.Contains(got, "10.") || strings.Contains(got, strconv.Itoa(53)) {
				t.Fatalf("Reason = %q, want %q", got, tc.reason)
			}
		})
	}
}
