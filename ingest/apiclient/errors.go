package apiclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// ResponseError is a failed answer of the edge, read from whichever of its
// error envelopes it used (platform, typed or rate limit).
type ResponseError struct {
	Status     int            // HTTP status
	Code       string         // error.code, when the envelope carries one
	Message    string         // error.message
	Details    map[string]any // error.details (platform) or the typed envelope's extra fields
	RequestID  string         // X-Request-ID, else error.details.request_id
	RetryAfter int            // seconds to wait, on 429 and on readiness 500s
}

func (e *ResponseError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// CheckResponse returns nil for a 2xx answer and a *ResponseError for any
// other, decoded from body (the answer's bytes, as the generated
// XxxWithResponse methods keep them in Body).
func CheckResponse(resp *http.Response, body []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &ResponseError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-ID")}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = s
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 {
		var obj map[string]any
		if json.Unmarshal(env.Error, &obj) == nil {
			e.Code, _ = obj["code"].(string)
			e.Message, _ = obj["message"].(string)
			if d, ok := obj["details"].(map[string]any); ok {
				e.Details = d
			} else {
				// The typed envelope keeps its details beside code and message.
				for k, v := range obj {
					switch k {
					case "code", "message", "status":
					default:
						if e.Details == nil {
							e.Details = map[string]any{}
						}
						e.Details[k] = v
					}
				}
			}
		} else {
			json.Unmarshal(env.Error, &e.Message) // {"error": "text"}
		}
	}
	if n, ok := e.Details["retry_after_seconds"].(float64); ok && n > 0 {
		e.RetryAfter = int(n)
	}
	if e.RequestID == "" {
		e.RequestID, _ = e.Details["request_id"].(string)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}
