package ingest

import (
	"log/slog"
	"testing"
)

func TestAccessLogLevel(t *testing.T) {
	for _, tc := range []struct {
		path   string
		status int
		want   slog.Level
	}{
		{"/api/v1/track/click", 200, slog.LevelDebug},
		{"/api/v1/track/visit", 200, slog.LevelDebug},
		{"/api/v1/track/click", 400, slog.LevelInfo},
		{"/api/v1/track/click", 429, slog.LevelInfo},
		{"/api/v1/track/click", 500, slog.LevelError},
		{"/api/v1/track/sale", 200, slog.LevelInfo},
		{"/api/v1/track/lead", 200, slog.LevelInfo},
		{"/api/v1/track/sale", 503, slog.LevelError},
		{"/api/v1/track/clicks", 200, slog.LevelInfo},
	} {
		if got := accessLogLevel(tc.path, tc.status); got != tc.want {
			t.Errorf("%s %d: %v, want %v", tc.path, tc.status, got, tc.want)
		}
	}
}
