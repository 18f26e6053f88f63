package ingest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// echoProgram is a minimal handler behind the real sale and refund
// middleware, for testing authentication apart from the endpoints.
func echoProgram(c *fiber.Ctx) error {
	k := programKeyOf(c)
	return c.JSON(fiber.Map{"success": true, "program_id": k.ProgramID, "mode": string(k.Mode)})
}

func mountKeyRoutes(s *Server) {
	s.app.Post("/test/sale", s.saleChain(echoProgram)...)
	s.app.Post("/test/refund", s.refundChain(echoProgram)...)
	s.app.Post("/test/sale-fails", s.saleChain(func(c *fiber.Ctx) error {
		return invalid("amount_cents is required and must be a positive integer")
	})...)
}

func TestProgramKey401Messages(t *testing.T) {
	b := setup(t)
	mountKeyRoutes(b.srv)
	w := MustWorld(t, b.app)
	for _, tc := range []struct {
		desc   string
		path   string
		header map[string]string
		want   string
	}{
		{"sale: header absent", "/test/sale", nil, "Missing or malformed Authorization header; expected Bearer token"},
		{"sale: not Bearer", "/test/sale", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, "Missing or malformed Authorization header; expected Bearer token"},
		{"sale: lower-case scheme", "/test/sale", map[string]string{"Authorization": "bearer " + w.liveKey}, "Missing or malformed Authorization header; expected Bearer token"},
		{"sale: token without scheme", "/test/sale", map[string]string{"Authorization": w.liveKey}, "Missing or malformed Authorization header; expected Bearer token"},
		{"sale: empty token", "/test/sale", map[string]string{"Authorization": "Bearer "}, "Missing API token"},
		{"sale: blank token", "/test/sale", map[string]string{"Authorization": "Bearer    "}, "Missing API token"},
		{"sale: unknown token", "/test/sale", bearer("aff_nope"), "Invalid API token"},
		{"refund: header absent", "/test/refund", nil, "Missing or malformed Authorization header; expected Bearer token"},
		{"refund: empty token", "/test/refund", map[string]string{"Authorization": "Bearer "}, "Empty Bearer token"},
		{"refund: unknown token", "/test/refund", bearer("aff_nope"), "Invalid API token"},
		{"refund: older key without prefix, unknown", "/test/refund", bearer("0123456789abcdef"), "Invalid API token"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := do(t, b.app, req{"POST", tc.path, map[string]any{}, tc.header})
			if r.Status != 401 {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			assertPlatformError(t, r, 401, "UnauthorizedError", tc.want, "unauthorized")
			if r.Header.Get("X-Request-ID") == "" {
				t.Fatal("no X-Request-ID")
			}
		})
	}

	t.Run("OK", func(t *testing.T) {
		for _, path := range []string{"/test/sale", "/test/refund"} {
			r := do(t, b.app, req{"POST", path, map[string]any{}, bearer(w.liveKey)})
			if r.Status != 200 || id(r.Body["program_id"]) != w.programID || r.Body["mode"] != "live" {
				t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
			}
			if _, ok := r.Body["warnings"]; ok || r.Header.Get("Deprecation") != "" {
				t.Fatalf("an unmarked key got rotation signals: %s", r.Raw)
			}
		}
	})
}

func assertPlatformError(t *testing.T, r response, status int, name, message, code string) {
	t.Helper()
	data, hasData := r.Body["data"]
	if !hasData || data != nil {
		t.Fatalf("platform envelope needs data: null: %s", r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object: %s", r.Raw)
	}
	if int(e["status"].(float64)) != status || e["name"] != name || e["message"] != message {
		t.Fatalf("error = %v, want %d %s %q", e, status, name, message)
	}
	if _, ok := e["details"].(map[string]any); !ok {
		t.Fatalf("details must be an object: %s", r.Raw)
	}
	if code == "" {
		if _, ok := e["code"]; ok {
			t.Fatalf("error.code present on a route without stable codes: %s", r.Raw)
		}
	} else if e["code"] != code {
		t.Fatalf("error.code = %v, want %s", e["code"], code)
	}
}

func TestKeyRotation(t *testing.T) {
	b := setup(t)
	mountKeyRoutes(b.srv)
	w := MustWorld(t, b.app)
	now := b.clock.Now()
	deadline := now.Add(48 * time.Hour).Truncate(time.Second)
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/key-rotation",
		map[string]any{"deadline": deadline.Format(time.RFC3339)}, operator()}), 200)
	if d["deadline"] != formatTime(deadline) {
		t.Fatalf("deadline = %v", d["deadline"])
	}
	markedAt, _ := time.Parse(time.RFC3339Nano, d["marked_at"].(string))

	checkHeaders := func(t *testing.T, r response) {
		t.Helper()
		if got, want := r.Header.Get("Deprecation"), "@"+strconv.FormatInt(markedAt.Unix(), 10); got != want {
			t.Fatalf("Deprecation = %q, want %q", got, want)
		}
		if got, want := r.Header.Get("Sunset"), deadline.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("Sunset = %q, want %q", got, want)
		}
		if got, want := r.Header.Get("Link"), `<https://track.example/docs/errors#api_key_rotation_required>; rel="deprecation"`; got != want {
			t.Fatalf("Link = %q, want %q", got, want)
		}
	}

	t.Run("MarkedStillAuthenticates", func(t *testing.T) {
		r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(w.liveKey)})
		if r.Status != 200 || r.Body["success"] != true || id(r.Body["program_id"]) != w.programID {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		checkHeaders(t, r)
		warnings, _ := r.Body["warnings"].([]any)
		if len(warnings) != 1 {
			t.Fatalf("warnings = %v", r.Body["warnings"])
		}
		wn := warnings[0].(map[string]any)
		if wn["code"] != "api_key_rotation_required" || wn["rotate_by"] != formatTime(deadline) ||
			wn["docs_url"] != "https://track.example/docs/errors#api_key_rotation_required" ||
			wn["message"] == "" || wn["hint"] == "" {
			t.Fatalf("warning = %v", wn)
		}
		// The warning is added without touching the other fields.
		if !strings.HasPrefix(string(r.Raw), `{"mode":"live","program_id":`) {
			t.Fatalf("body rewritten: %s", r.Raw)
		}
	})

	t.Run("MarkedErrorsCarryWarningsToo", func(t *testing.T) {
		r := do(t, b.app, req{"POST", "/test/sale-fails", map[string]any{}, bearer(w.liveKey)})
		assertPlatformError(t, r, 400, "BadRequestError", "amount_cents is required and must be a positive integer", "invalid_request")
		checkHeaders(t, r)
		if _, ok := r.Body["warnings"].([]any); !ok {
			t.Fatalf("no warnings on an error response: %s", r.Raw)
		}
	})

	t.Run("RetiredAtDeadline", func(t *testing.T) {
		b.clock.Set(deadline)
		defer b.clock.Set(now)
		for _, path := range []string{"/test/sale", "/test/refund"} {
			r := do(t, b.app, req{"POST", path, map[string]any{}, bearer(w.liveKey)})
			if r.Status != 401 {
				t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
			}
			checkHeaders(t, r)
			if _, ok := r.Body["data"]; ok {
				t.Fatalf("typed envelope has no data key: %s", r.Raw)
			}
			if _, ok := r.Body["warnings"]; ok {
				t.Fatalf("a retired key's 401 carries no warnings: %s", r.Raw)
			}
			e := r.Body["error"].(map[string]any)
			if e["code"] != "api_key_rotation_required" || e["message"] == "" || e["hint"] == "" ||
				e["docs_url"] != "https://track.example/docs/errors#api_key_rotation_required" {
				t.Fatalf("error = %v", e)
			}
		}
	})

	t.Run("RegenerateStopsWarnings", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key", nil, bearer(w.ownerToken)}), 200)
		r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(d["api_key"].(string))})
		if r.Status != 200 || r.Header.Get("Deprecation") != "" {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Raw)
		}
		if _, ok := r.Body["warnings"]; ok {
			t.Fatalf("warnings after regeneration: %s", r.Raw)
		}
		if r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(w.liveKey)}); r.Status != 401 {
			t.Fatalf("old marked key after regeneration: %d", r.Status)
		}
	})
}

func TestRegenerateInvalidatesOldKeyOnEveryInstance(t *testing.T) {
	b := setup(t)
	second := newTestServer(b.db, b.clock) // another edge replica, same database
	mountKeyRoutes(b.srv)
	mountKeyRoutes(second)
	w := MustWorld(t, b.app)

	if r := do(t, second.App(), req{"POST", "/test/sale", map[string]any{}, bearer(w.liveKey)}); r.Status != 200 {
		t.Fatalf("second instance before regeneration: %d %s", r.Status, r.Raw)
	}
	d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/api-key", nil, bearer(w.ownerToken)}), 200)
	newKey := d["api_key"].(string)
	for name, app := range map[string]*fiber.App{"first": b.app, "second": second.App()} {
		r := do(t, app, req{"POST", "/test/sale", map[string]any{}, bearer(w.liveKey)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "Invalid API token", "unauthorized")
		if r := do(t, app, req{"POST", "/test/sale", map[string]any{}, bearer(newKey)}); r.Status != 200 {
			t.Fatalf("%s instance refuses the new key: %d", name, r.Status)
		}
	}
}

func TestGenerateAPIKey(t *testing.T) {
	b := setup(t)
	mountKeyRoutes(b.srv)
	w := MustWorld(t, b.app)
	path := "/api/v1/programs/" + itoa(w.programID) + "/api-key"

	t.Run("OKLive", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", path, nil, bearer(w.ownerToken)}), 200)
		key := d["api_key"].(string)
		if !strings.HasPrefix(key, "aff_") || d["api_token_masked"] != "aff_****"+key[len(key)-4:] {
			t.Fatalf("data = %v", d)
		}
	})
	t.Run("OKTest", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"mode": "test"}, bearer(w.ownerToken)}), 200)
		key := d["api_key"].(string)
		if !strings.HasPrefix(key, "aff_test_") {
			t.Fatalf("test key = %q", key)
		}
		r := do(t, b.app, req{"POST", "/test/sale", map[string]any{}, bearer(key)})
		if r.Status != 200 || r.Body["mode"] != "test" {
			t.Fatalf("test key auth: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("ErrNotOwner", func(t *testing.T) {
		for _, role := range []string{"admin", "member"} {
			d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/workspaces/" + itoa(w.workspaceID) + "/members",
				map[string]any{"email": role + "@acme.example", "role": role}, operator()}), 201)
			s := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(id(d["user_id"])) + "/sessions", nil, operator()}), 201)
			r := do(t, b.app, req{"POST", path, nil, bearer(s["token"].(string))})
			assertPlatformError(t, r, 403, "ForbiddenError", msgOwnerOnly, "")
		}
	})
	t.Run("ErrOtherWorkspace", func(t *testing.T) {
		other := MustWorld(t, b.app)
		r := do(t, b.app, req{"POST", path, nil, bearer(other.ownerToken)})
		if r.Status != 403 {
			t.Fatalf("owner of another workspace: %d %s", r.Status, r.Raw)
		}
	})
	t.Run("ErrNoSession", func(t *testing.T) {
		for _, h := range []map[string]string{nil, bearer("pt_sess_bogus"), bearer(w.liveKey)} {
			if r := do(t, b.app, req{"POST", path, nil, h}); r.Status != 401 {
				t.Fatalf("header %v: %d %s", h, r.Status, r.Raw)
			}
		}
	})
	t.Run("ErrUnknownProgram", func(t *testing.T) {
		r := do(t, b.app, req{"POST", "/api/v1/programs/99999999/api-key", nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
	})
	t.Run("ErrBadMode", func(t *testing.T) {
		r := do(t, b.app, req{"POST", path, map[string]any{"mode": "prod"}, bearer(w.ownerToken)})
		assertPlatformError(t, r, 400, "BadRequestError", msgKeyMode, "")
	})
}
