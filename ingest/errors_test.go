package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

var update = flag.Bool("update", false, "rewrite the golden files of envelope tests")

// mountEnvelopeRoutes adds routes that fail in each way an endpoint can,
// behind the real styles and middleware.
func mountEnvelopeRoutes(s *Server) {
	fail := func(err error) fiber.Handler { return func(*fiber.Ctx) error { return err } }
	s.app.Post("/test/sale-internal", s.saleChain(fail(errors.New("connection reset by peer")))...)
	s.app.Post("/test/sale-commission", s.saleChain(fail(ledger.NewError(ledger.EInternal, "Failed to create commission")))...)
	s.app.Post("/test/sale-duplicate", s.saleChain(fail(ledger.NewError(ledger.EDuplicateTransaction,
		"Duplicate transaction_id. This sale has already been recorded.").WithDetails(map[string]any{"sale_id": 42})))...)
	s.app.Post("/test/sale-currency", s.saleChain(fail(ledger.NewError(ledger.EUnsupportedCurrency, "currency GBP is not supported")))...)
	s.app.Post("/test/click-disabled", withStyle(errorStyle{internalMessage: "Click tracking failed"}), fail(&ledger.Error{
		Code: ledger.ELinkDisabled, Message: "This referral link is disabled",
		Details: map[string]any{"hint": "Ask the partner for an active link"}}))
	s.app.Get("/test/cli-status", withStyle(errorStyle{cli: true, internalMessage: "Failed to get status"}), fail(errors.New("db down")))
	s.app.Get("/test/readiness", withStyle(errorStyle{typed: true, internalMessage: "Failed to compute readiness. Retry shortly.", retryAfter: 10}),
		s.requireProgramKey(keyAuth{typed: true}), fail(errors.New("db down")))
	s.app.Post("/test/panic", withStyle(errorStyle{internalMessage: "Lead tracking failed"}), func(*fiber.Ctx) error { panic("boom") })
}

func TestEnvelopesGolden(t *testing.T) {
	b := setup(t)
	mountKeyRoutes(b.srv)
	mountEnvelopeRoutes(b.srv)
	w := MustWorld(t, b.app)
	big := `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, tc := range []struct {
		name   string
		r      req
		status int
	}{
		{"platform_400_not_json", req{"POST", "/api/operator/v1/workspaces", "not json", operator()}, 400},
		{"platform_400_array", req{"POST", "/api/operator/v1/workspaces", "[1,2]", operator()}, 400},
		{"platform_401_operator", req{"POST", "/api/operator/v1/workspaces", map[string]any{}, bearer("wrong")}, 401},
		{"platform_404_route", req{"GET", "/api/v1/nothing-here", nil, nil}, 404},
		{"sale_401_malformed", req{"POST", "/test/sale", map[string]any{}, nil}, 401},
		{"sale_409_duplicate", req{"POST", "/test/sale-duplicate", map[string]any{}, bearer(w.liveKey)}, 409},
		{"sale_422_currency", req{"POST", "/test/sale-currency", map[string]any{}, bearer(w.liveKey)}, 422},
		{"sale_500_unexpected", req{"POST", "/test/sale-internal", map[string]any{}, bearer(w.liveKey)}, 500},
		{"sale_500_commission", req{"POST", "/test/sale-commission", map[string]any{}, bearer(w.liveKey)}, 500},
		{"typed_413_body", req{"POST", "/test/sale", big, bearer(w.liveKey)}, 413},
		{"typed_410_link_disabled", req{"POST", "/test/click-disabled", map[string]any{}, nil}, 410},
		{"typed_401_readiness", req{"GET", "/test/readiness", nil, map[string]string{"Authorization": "Bearer "}}, 401},
		{"typed_500_readiness", req{"GET", "/test/readiness", nil, bearer(w.liveKey)}, 500},
		{"cli_500_request_id", req{"GET", "/test/cli-status", nil, nil}, 500},
		{"platform_500_panic", req{"POST", "/test/panic", map[string]any{}, nil}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, b.app, tc.r)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Raw)
			}
			rid := r.Header.Get("X-Request-ID")
			if rid == "" {
				t.Fatal("no X-Request-ID")
			}
			got := normalizeJSON(t, bytes.ReplaceAll(r.Raw, []byte(rid), []byte("REQUEST_ID")))
			golden := filepath.Join("testdata", "envelopes", tc.name+".json")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./ingest -run TestEnvelopesGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("envelope differs from %s\n got: %s\nwant: %s", golden, got, want)
			}
		})
	}
}

func normalizeJSON(t *testing.T, raw []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %s", raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return append(out, '\n')
}

func TestRequestIDFromCaller(t *testing.T) {
	b := setup(t)
	r := do(t, b.app, req{"GET", "/healthz", nil, map[string]string{"X-Request-ID": "abc-123"}})
	if r.Header.Get("X-Request-ID") != "abc-123" {
		t.Fatalf("X-Request-ID = %q", r.Header.Get("X-Request-ID"))
	}
	r = do(t, b.app, req{"GET", "/healthz", nil, map[string]string{"X-Request-ID": "evil\" <script>"}})
	if got := r.Header.Get("X-Request-ID"); !strings.HasPrefix(got, "req_") {
		t.Fatalf("an unsafe caller id was echoed: %q", got)
	}
}
