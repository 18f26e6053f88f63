package ledger

import (
	"errors"
	"fmt"
)

// Stable error codes. The spec's codes for sale and refund calls come first;
// the rest name the other outcomes the edge renders.
const (
	EInvalid              = "invalid_request"
	ENoAttribution        = "no_attribution"
	EUnauthorized         = "unauthorized"
	ENotFound             = "not_found"
	EDuplicateTransaction = "duplicate_transaction"
	EUnsupportedCurrency  = "unsupported_currency"
	EInternal             = "internal_error"

	EForbidden           = "forbidden"
	EConflict            = "conflict"
	EGone                = "gone"
	ELinkDisabled        = "link_disabled"
	EKeyRotationRequired = "api_key_rotation_required"
	EInvalidKey          = "invalid_key"
	ERateLimited         = "rate_limited"
	EPayloadTooLarge     = "payload_too_large"
)

// Error is an expected failure: a stable code, a message meant for the
// caller, and optional details (for example the stored sale's id on a
// duplicate transaction).
type Error struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string {
	return fmt.Sprintf("ledger error: code=%s message=%s", e.Code, e.Message)
}

// NewError returns an *Error with the given code and message.
func NewError(code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(details map[string]any) *Error {
	c := *e
	c.Details = details
	return &c
}

// ErrorCode returns the code of err when it is (or wraps) an *Error, and
// EInternal for any other non-nil error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the caller-facing message of err, or "" when err is
// not an *Error (an unexpected failure has no message meant for callers).
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}
