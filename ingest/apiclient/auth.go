package apiclient

import (
	"context"
	"net/http"
)

// UserAgent returns a ClientOption that names the caller in User-Agent.
func UserAgent(ua string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("User-Agent", ua)
		return nil
	})
}

// Bearer returns a RequestEditorFn that sends token as the request's
// credential (a program key, a dashboard or CLI login token, an agent key
// or the operator token); pass it to one call, or to every call with
// WithRequestEditorFn. An empty token sends no Authorization header.
func Bearer(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// Ptr returns a pointer to v, for the optional fields of request types.
func Ptr[T any](v T) *T { return &v }
