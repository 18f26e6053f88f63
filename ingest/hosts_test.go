package ingest

import (
	"net/http/httptest"
	"testing"
)

// TestAllowedHosts: with AllowedHosts set (the development sign-in), a
// request naming another host, as a DNS-rebinding page sends, is refused
// before any route runs; loopback names on any port pass.
func TestAllowedHosts(t *testing.T) {
	b := setup(t)
	srv := newTestServer(b.db, b.clock, func(_ *Services, o *Options) {
		o.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	})
	for host, want := range map[string]int{
		"localhost:8080": 200, "127.0.0.1:8080": 200, "[::1]:8080": 200, "LOCALHOST": 200,
		"evil.example": 421, "evil.example:8080": 421, "127.0.0.1.evil.example": 421,
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Host = host
		resp, err := srv.App().Test(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
