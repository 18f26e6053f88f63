package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"
)

// Generic reasons of a failed delivery, as the delivery log shows them to
// brand admins. Go's errors name the resolved address and port of the
// receiver (`dial tcp 10.0.0.7:443: connect: connection refused`), which
// tells a brand about the service's network; the worker's own log keeps
// the whole error.
const (
	ReasonRefused     = "connection refused"
	ReasonReset       = "connection reset"
	ReasonTimeout     = "timeout"
	ReasonBlocked     = "blocked address"
	ReasonTLS         = "TLS error"
	ReasonHostUnknown = "host not found"
	ReasonDNS         = "DNS error"
	ReasonUnreachable = "network unreachable"
	ReasonSigning     = "signing failed"
	ReasonCanceled    = "canceled"
	ReasonFailed      = "connection failed"
)

// Reason returns the generic reason of a delivery error ("" for nil): the
// receiver's status for a *StatusError, otherwise one of the Reason
// constants, never an address.
func Reason(err error) string {
	var (
		status   *StatusError
		dns      *net.DNSError
		netErr   net.Error
		certErr  *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invalid  x509.CertificateInvalidError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		signFail *signError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &status):
		return status.Error()
	case errors.Is(err, ErrRefusedTarget):
		return ReasonBlocked
	case errors.As(err, &signFail):
		return ReasonSigning
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &hostErr), errors.As(err, &invalid),
		errors.As(err, &alert), errors.As(err, &record):
		return ReasonTLS
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return ReasonHostUnknown
		}
		if dns.IsTimeout {
			return ReasonTimeout
		}
		return ReasonDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ReasonUnreachable
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	}
	return ReasonFailed
}

// signError is a delivery that could not be signed (a stored secret that
// does not decode).
type signError struct{ err error }

func (e *signError) Error() string { return "notify: cannot sign the webhook: " + e.err.Error() }
func (e *signError) Unwrap() error { return e.err }
