package ingest

import (
	"errors"
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Codes of failures that only the transport produces.
const (
	eMethodNotAllowed = "method_not_allowed"
	eRequestTimeout   = "request_timeout"
	eUnavailable      = "service_unavailable"
	eHeaderTooLarge   = "header_too_large"
)

// codeStatus is the only table in the service from error codes to HTTP
// statuses.
var codeStatus = map[string]int{
	ledger.EInvalid:              fiber.StatusBadRequest,
	ledger.ENoAttribution:        fiber.StatusBadRequest,
	ledger.EUnauthorized:         fiber.StatusUnauthorized,
	ledger.EInvalidKey:           fiber.StatusUnauthorized,
	ledger.EKeyRotationRequired:  fiber.StatusUnauthorized,
	ledger.EForbidden:            fiber.StatusForbidden,
	ledger.ENotFound:             fiber.StatusNotFound,
	eMethodNotAllowed:            fiber.StatusMethodNotAllowed,
	eRequestTimeout:              fiber.StatusRequestTimeout,
	ledger.EDuplicateTransaction: fiber.StatusConflict,
	ledger.EConflict:             fiber.StatusConflict,
	ledger.EGone:                 fiber.StatusGone,
	ledger.ELinkDisabled:         fiber.StatusGone,
	ledger.EPayloadTooLarge:      fiber.StatusRequestEntityTooLarge,
	eHeaderTooLarge:              fiber.StatusRequestHeaderFieldsTooLarge,
	ledger.EUnsupportedCurrency:  fiber.StatusUnprocessableEntity,
	ledger.ERateLimited:          fiber.StatusTooManyRequests,
	ledger.EInternal:             fiber.StatusInternalServerError,
	eUnavailable:                 fiber.StatusServiceUnavailable,
}

// statusCode is the reverse, for errors raised by fiber itself.
var statusCode = map[int]string{
	fiber.StatusBadRequest:                  ledger.EInvalid,
	fiber.StatusUnauthorized:                ledger.EUnauthorized,
	fiber.StatusForbidden:                   ledger.EForbidden,
	fiber.StatusNotFound:                    ledger.ENotFound,
	fiber.StatusMethodNotAllowed:            eMethodNotAllowed,
	fiber.StatusRequestTimeout:              eRequestTimeout,
	fiber.StatusRequestEntityTooLarge:       ledger.EPayloadTooLarge,
	fiber.StatusRequestHeaderFieldsTooLarge: eHeaderTooLarge,
	fiber.StatusTooManyRequests:             ledger.ERateLimited,
	fiber.StatusServiceUnavailable:          eUnavailable,
}

// statusNames are the platform envelope's error names.
var statusNames = map[int]string{
	400: "BadRequestError",
	401: "UnauthorizedError",
	403: "ForbiddenError",
	404: "NotFoundError",
	405: "MethodNotAllowedError",
	408: "RequestTimeoutError",
	409: "ConflictError",
	410: "GoneError",
	413: "PayloadTooLargeError",
	422: "UnprocessableEntityError",
	429: "TooManyRequestsError",
	431: "RequestHeaderFieldsTooLargeError",
	500: "InternalServerError",
	503: "ServiceUnavailableError",
}

// typedCodes are always rendered in the typed envelope, on any route.
var typedCodes = map[string]bool{
	ledger.ERateLimited:         true,
	ledger.EKeyRotationRequired: true,
	ledger.ELinkDisabled:        true,
	ledger.EPayloadTooLarge:     true,
	ledger.EInvalidKey:          true,
}

// fiberMessages replace fiber's own texts ("Cannot GET /x") with ours.
var fiberMessages = map[int]string{
	fiber.StatusNotFound:                    "Not found",
	fiber.StatusMethodNotAllowed:            "Method not allowed",
	fiber.StatusRequestEntityTooLarge:       "Request body too large",
	fiber.StatusRequestTimeout:              "Request timeout",
	fiber.StatusRequestHeaderFieldsTooLarge: "Request headers too large",
}

// errorStyle is how a route renders its errors; routes set it with
// withStyle before any other route middleware.
type errorStyle struct {
	typed           bool   // every error in the typed envelope (readiness)
	stableCodes     bool   // the platform envelope carries error.code (sale, refund)
	cli             bool   // 500 messages end with the request id, which details repeat
	internalMessage string // message of an unexpected failure on this route
	retryAfter      int    // seconds a client should wait after a 500 (readiness: 10)
}

type styleKey struct{}

var defaultStyle = errorStyle{internalMessage: "Internal server error"}

// withStyle sets the route's error style; it is also where a query string
// or path that is not text is refused (withTextParams), now that the
// refusal renders in the route's envelope.
func withStyle(s errorStyle) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Locals(styleKey{}, s)
		if err := paramsError(c); err != nil {
			return err
		}
		return c.Next()
	}
}

func routeStyle(c *fiber.Ctx) errorStyle {
	if s, ok := c.Locals(styleKey{}).(errorStyle); ok {
		return s
	}
	return defaultStyle
}

// handleError is the app's fiber ErrorHandler: it renders every error.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	if requestID(c) == "" {
		// Errors raised while reading the request (a body over the
		// server's limit) reach here before any middleware ran.
		id := newRequestID()
		c.Locals(requestIDKey{}, id)
		c.Set(headerRequestID, id)
		c.Set(headerNoSniff, "nosniff")
	}
	style := routeStyle(c)
	code, message, details := ledger.EInternal, "", map[string]any(nil)
	var le *ledger.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &le):
		code, message, details = le.Code, le.Message, le.Details
	case errors.As(err, &fe):
		if c, ok := statusCode[fe.Code]; ok {
			code = c
		}
		message = fe.Message
		if m, ok := fiberMessages[fe.Code]; ok {
			message = m
		}
	}
	status, ok := codeStatus[code]
	if !ok {
		status = fiber.StatusInternalServerError
	}
	if code == ledger.EInternal && (le == nil || message == "") {
		message = style.internalMessage // an unexpected failure says only what failed
	}
	if status >= 500 {
		s.logger.LogAttrs(c.UserContext(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(c)), slog.String("route", c.Route().Path),
			slog.Int("status", status), slog.String("err", err.Error()))
		if style.retryAfter > 0 {
			details = mergeDetails(details, map[string]any{"retry_after_seconds": style.retryAfter})
		}
		if style.cli {
			id := requestID(c)
			message += " (request_id: " + id + ")"
			details = mergeDetails(details, map[string]any{"request_id": id})
		}
	}
	if message == "" {
		message = strconv.Itoa(status)
	}
	// The dashboard's pages answer in HTML (pageerrors.go).
	if isPagePath(c.Path()) {
		return renderPageError(c, status, message)
	}

	if style.typed || typedCodes[code] {
		return renderTyped(c, status, code, message, details)
	}
	e := fiber.Map{
		"status":  status,
		"name":    statusName(status),
		"message": message,
		"details": mergeDetails(details, nil),
	}
	if style.stableCodes {
		e["code"] = code
	}
	return c.Status(status).JSON(fiber.Map{"data": nil, "error": e})
}

// renderTyped writes the typed envelope: no data key; error.code and
// error.message always, the details as siblings. A disabled link keeps the
// older top-level success and message.
func renderTyped(c *fiber.Ctx, status int, code, message string, details map[string]any) error {
	e := fiber.Map{"code": code, "message": message, "status": status}
	for k, v := range details {
		e[k] = v
	}
	body := fiber.Map{"error": e}
	if code == ledger.ELinkDisabled {
		body["success"] = false
		body["message"] = message
	}
	return c.Status(status).JSON(body)
}

func statusName(status int) string {
	if n, ok := statusNames[status]; ok {
		return n
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "BadRequestError"
}

func mergeDetails(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
