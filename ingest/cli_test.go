package ingest

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc"
	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ratelimit"
)

// cliBundle is an edge with the click pipeline (as in production: link
// cache, group commit into a Redis namespace of the test), the CLI family,
// readiness and sources, and sign-in trusting an in-process test issuer.
type cliBundle struct {
	*clickBundle
	iss *testissuer.Issuer
}

func setupCLI(t *testing.T) *cliBundle {
	t.Helper()
	b := &cliBundle{clickBundle: setupClicks(t), iss: testissuer.New(t)}
	b.wireCLI(b.srv, b.db.DB)
	return b
}

// wireCLI gives srv the CLI services over db (another, broken database for
// the 500 tests).
func (b *cliBundle) wireCLI(srv *Server, db *postgres.DB) {
	srv.cfg.OIDCIssuerURL, srv.cfg.OIDCClientID = b.iss.URL, testissuer.ClientID
	srv.svc.Identity = oidc.New(oidc.Config{IssuerURL: b.iss.URL, ClientID: testissuer.ClientID, Now: b.clock.Now})
	cli := postgres.NewCLIService(db)
	srv.svc.CLILogin, srv.svc.CLI = cli, cli
	srv.svc.Synthetic = &ledger.Synthetic{
		Store:     postgres.NewSyntheticStore(db),
		Cap:       ratelimit.NewCap(b.rdb, b.ns.Key("partnertrack:"), ledger.ChainCapRuns, ledger.ChainCapWindow, b.clock.Now),
		Links:     srv.svc.Tracking,
		LinkCache: srv.svc.TrackingCache,
		Clicks:    srv.svc.Traffic,
		Leads:     srv.svc.Leads,
		Sales:     srv.svc.Sales,
		Now:       b.clock.Now,
	}
	srv.svc.Readiness = postgres.NewReadinessService(db)
	srv.svc.Analytics = postgres.NewAnalyticsService(db)
}

// brokenEdge is an edge of the bundle whose named services run over a
// closed database: each of their calls fails unexpectedly.
func (b *cliBundle) brokenEdge(t *testing.T, tweak func(srv *Server, gone *postgres.DB)) *Server {
	t.Helper()
	gone := pgtest.New(t)
	gone.Close()
	srv := newTestServer(b.db, b.clock)
	b.wire(t, srv, b.rdb)
	b.wireCLI(srv, b.db.DB)
	tweak(srv, gone.DB)
	return srv
}

// login runs the browser login for email and returns the CLI login token.
func (b *cliBundle) login(t *testing.T, sub, email string) string {
	t.Helper()
	start := mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/auth/start", nil, nil}), 200)
	state := start["state"].(string)
	mustOK(t, do(t, b.app, confirmReq(state, start["user_code"])), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/auth/callback", map[string]any{"state": state, "id_token": b.iss.Token(t, sub, email)}, nil}), 200)
	poll := mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state), nil, nil}), 200)
	return poll["token"].(string)
}

// start starts a login and confirms its code, as the person does on the
// sign-in page; it returns the state.
func (b *cliBundle) start(t *testing.T) string {
	t.Helper()
	start := mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/auth/start", nil, nil}), 200)
	mustOK(t, do(t, b.app, confirmReq(start["state"].(string), start["user_code"])), 200)
	return start["state"].(string)
}

func confirmReq(state string, userCode any) req {
	return req{"POST", "/api/v1/cli/auth/confirm", map[string]any{"state": state, "user_code": userCode}, nil}
}

func pollReq(state string) req {
	return req{"GET", "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state), nil, nil}
}

func callbackReq(state, idToken string) req {
	return req{"POST", "/api/v1/cli/auth/callback", map[string]any{"state": state, "id_token": idToken}, nil}
}

// ownerEmail is the email of the world's owner, as the operator created it.
func (b *cliBundle) ownerEmail(t *testing.T, w world) string {
	t.Helper()
	var email string
	if err := b.db.QueryRow(`SELECT email FROM users WHERE id = $1`, w.ownerID).Scan(&email); err != nil {
		t.Fatal(err)
	}
	return email
}

func TestCLILoginFlow(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	now := b.clock.Now()

	r := do(t, b.app, req{"POST", "/api/v1/cli/auth/start", nil, nil})
	start := mustOK(t, r, 200)
	state := start["state"].(string)
	if start["auth_url"] != "https://track.example/cli/login?state="+state ||
		start["poll_url"] != "https://track.example/api/v1/cli/auth/poll?state="+state ||
		start["expires_at"] != formatTime(now.Add(5*time.Minute)) || r.Header.Get("X-Request-ID") == "" {
		t.Fatalf("start %s", r.Raw)
	}
	if d := mustOK(t, do(t, b.app, pollReq(state)), 200); d["status"] != "pending" || d["token"] != nil {
		t.Fatalf("poll before sign-in: %v", d)
	}
	// The person confirms the code and signs in four minutes later: an
	// owner the operator created, whose email the provider spells in
	// capitals.
	mustOK(t, do(t, b.app, confirmReq(state, start["user_code"])), 200)
	b.clock.Set(now.Add(4 * time.Minute))
	email := b.ownerEmail(t, w)
	d := mustOK(t, do(t, b.app, callbackReq(state, b.iss.Token(t, "sub-owner", strings.ToUpper(email)))), 200)
	if d["email"] != email || d["status"] != "signed_in" {
		t.Fatalf("callback %v", d)
	}
	poll := mustOK(t, do(t, b.app, pollReq(state)), 200)
	token, _ := poll["token"].(string)
	if poll["status"] != "complete" || !strings.HasPrefix(token, "pt_cli_") || poll["email"] != email ||
		id(poll["advertiser_id"]) != w.workspaceID || id(poll["user_id"]) != w.ownerID {
		t.Fatalf("first poll after sign-in: %v", poll)
	}
	// The token works on the CLI routes, not on the dashboard's.
	if r := do(t, b.app, req{"GET", "/api/v1/cli/programs", nil, bearer(token)}); r.Status != 200 {
		t.Fatalf("programs with the token: %d", r.Status)
	}
	if r := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(token)}); r.Status != 401 {
		t.Fatalf("CLI token on the dashboard: %d", r.Status)
	}
	// Handed out once.
	assertPlatformError(t, do(t, b.app, pollReq(state)), 400, "BadRequestError", "Session already consumed", "")
	assertPlatformError(t, do(t, b.app, callbackReq(state, b.iss.Token(t, "sub-owner", email))), 404, "NotFoundError", "Session not found or already used", "")

	t.Run("a first sign-in creates the user, who has no advertiser", func(t *testing.T) {
		state := b.start(t)
		mustOK(t, do(t, b.app, callbackReq(state, b.iss.Token(t, "sub-new", "new.brand@example.com"))), 200)
		poll := mustOK(t, do(t, b.app, pollReq(state)), 200)
		if v, ok := poll["advertiser_id"]; !ok || v != nil || poll["email"] != "new.brand@example.com" {
			t.Fatalf("poll %v", poll)
		}
		var users int
		b.db.QueryRow(`SELECT count(*) FROM users WHERE email = 'new.brand@example.com' AND oidc_subject = 'sub-new'`).Scan(&users)
		if users != 1 {
			t.Fatal("user not created")
		}
	})
	t.Run("expired after five minutes", func(t *testing.T) {
		state := b.start(t)
		b.clock.Set(b.clock.Now().Add(5 * time.Minute))
		if d := mustOK(t, do(t, b.app, pollReq(state)), 200); d["status"] != "expired" || d["token"] != nil {
			t.Fatalf("poll %v", d)
		}
		assertPlatformError(t, do(t, b.app, callbackReq(state, b.iss.Token(t, "sub-owner", email))), 400, "BadRequestError", "Session expired", "")
	})
}

// assertCLI500 checks a CLI 500: the request id at the end of the message
// and in error.details.request_id, and in X-Request-ID.
func assertCLI500(t *testing.T, r response, what string) {
	t.Helper()
	rid := r.Header.Get("X-Request-ID")
	if rid == "" {
		t.Fatalf("CLI 500 without X-Request-ID: %s", r.Raw)
	}
	assertPlatformError(t, r, 500, "InternalServerError", what+" (request_id: "+rid+")", "")
	if d := r.Body["error"].(map[string]any)["details"].(map[string]any); d["request_id"] != rid {
		t.Fatalf("details.request_id = %v, want %s", d["request_id"], rid)
	}
}

func TestCLIEndpointErrors(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	ownerToken := b.login(t, "sub-owner", b.ownerEmail(t, w))
	orphanToken := b.login(t, "sub-orphan", "orphan@nowhere.example")
	expired := b.start(t)
	used := b.start(t)
	mustOK(t, do(t, b.app, callbackReq(used, b.iss.Token(t, "sub-owner", b.ownerEmail(t, w)))), 200)
	consumed := b.start(t)
	mustOK(t, do(t, b.app, callbackReq(consumed, b.iss.Token(t, "sub-owner", b.ownerEmail(t, w)))), 200)
	mustOK(t, do(t, b.app, pollReq(consumed)), 200)
	// A suspended user: the operator suspends the member it created.
	d := mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/workspaces/" + itoa(w.workspaceID) + "/members",
		map[string]any{"email": "blocked@acme.example", "role": "admin"}, operator()}), 201)
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/users/" + itoa(id(d["user_id"])) + "/suspend", nil, operator()}), 200)
	unverified := b.iss.Claims("sub-u", "unverified@acme.example", b.clock.Now())
	unverified["email_verified"] = false
	fresh := b.start(t)

	init := func(body map[string]any) req {
		full := map[string]any{"name": "Acme Two", "domain": "two.example", "commission_type": "percent", "commission_rate": 20}
		for k, v := range body {
			if v == nil {
				delete(full, k)
			} else {
				full[k] = v
			}
		}
		return req{"POST", "/api/v1/cli/init", full, bearer(ownerToken)}
	}
	type errCase struct {
		desc    string
		r       req
		status  int
		message string
		details string // error.details.code
	}
	cases := []errCase{
		// auth/callback
		{"callback without body", req{"POST", "/api/v1/cli/auth/callback", nil, nil}, 400, "Missing required fields: state, id_token", ""},
		{"callback without id_token", req{"POST", "/api/v1/cli/auth/callback", map[string]any{"state": fresh}, nil}, 400, "Missing required fields: state, id_token", ""},
		{"callback without state", req{"POST", "/api/v1/cli/auth/callback", map[string]any{"id_token": "x"}, nil}, 400, "Missing required fields: state, id_token", ""},
		{"callback with blank state", req{"POST", "/api/v1/cli/auth/callback", map[string]any{"state": "  ", "id_token": "x"}, nil}, 400, "Missing required fields: state, id_token", ""},
		{"callback with a number for id_token", req{"POST", "/api/v1/cli/auth/callback", map[string]any{"state": fresh, "id_token": 5}, nil}, 400, "Missing required fields: state, id_token", ""},
		{"callback of an unknown state", callbackReq("nope", "x"), 404, "Session not found or already used", ""},
		{"callback of a used session", callbackReq(used, b.iss.Token(t, "s", "a@b.example")), 404, "Session not found or already used", ""},
		{"callback of a suspended account", callbackReq(fresh, b.iss.Token(t, "sub-b", "blocked@acme.example")), 403, "Your account has been suspended.", "ACCOUNT_BLOCKED"},
		{"callback with an unverified email", callbackReq(fresh, b.iss.Sign(t, unverified)), 403, ledger.MsgProviderEmailNotVerified, "PROVIDER_EMAIL_NOT_VERIFIED"},
		{"callback with a bad token", callbackReq(fresh, "not-a-jwt"), 401, ledger.MsgIDTokenInvalid, ""},
		// auth/poll
		{"poll without state", req{"GET", "/api/v1/cli/auth/poll", nil, nil}, 400, "Missing state parameter", ""},
		{"poll with an empty state", req{"GET", "/api/v1/cli/auth/poll?state=", nil, nil}, 400, "Missing state parameter", ""},
		{"poll of an unknown state", pollReq("nope"), 404, "Session not found", ""},
		{"poll of a consumed session", pollReq(consumed), 400, "Session already consumed", ""},
		// init
		{"init without a header", req{"POST", "/api/v1/cli/init", map[string]any{}, nil}, 401, "Authentication required", ""},
		{"init with an unknown token", req{"POST", "/api/v1/cli/init", map[string]any{}, bearer("pt_cli_nope")}, 401, "invalid or expired token", ""},
		{"init with a dashboard token", req{"POST", "/api/v1/cli/init", map[string]any{}, bearer(w.ownerToken)}, 401, "invalid or expired token", ""},
		{"init without an advertiser", req{"POST", "/api/v1/cli/init", map[string]any{"name": "x"}, bearer(orphanToken)}, 403, "No advertiser found for this account", ""},
		{"init for another advertiser", init(map[string]any{"advertiser_id": other.workspaceID}), 403, "advertiser_id does not match the authenticated account", ""},
		{"init with a malformed advertiser", init(map[string]any{"advertiser_id": "acme"}), 403, "advertiser_id does not match the authenticated account", ""},
		{"init without name", init(map[string]any{"name": nil}), 400, "Missing required fields: name, domain, commission_type, commission_rate", ""},
		{"init without commission_rate", init(map[string]any{"commission_rate": nil}), 400, "Missing required fields: name, domain, commission_type, commission_rate", ""},
		{"init with an unknown type", init(map[string]any{"commission_type": "bounty"}), 400, "Invalid commission_type: bounty. Valid: percent, fixed, recurring_percent, recurring_fixed", ""},
		{"init with a type that is not a string", init(map[string]any{"commission_type": 5}), 400, "Invalid commission_type: 5. Valid: percent, fixed, recurring_percent, recurring_fixed", ""},
		{"init with a zero rate", init(map[string]any{"commission_rate": 0}), 400, "commission_rate must be a positive number", ""},
		{"init with a string rate", init(map[string]any{"commission_rate": "20"}), 400, "commission_rate must be a positive number", ""},
		{"init with a percent over 100", init(map[string]any{"commission_type": "recurring_percent", "commission_rate": 100.5}), 400, "commission_rate is a percentage for this type and cannot exceed 100", ""},
		{"init with a fractional duration", init(map[string]any{"duration_months": 1.5}), 400, "duration_months must be a whole number of months (0 = lifetime)", ""},
		{"init with a negative duration", init(map[string]any{"duration_months": -1}), 400, "duration_months must be a whole number of months (0 = lifetime)", ""},
		{"init with a zero cookie", init(map[string]any{"cookie_duration": 0}), 400, "cookie_duration must be a whole number of days from 1 to 365", ""},
		{"init with a long cookie", init(map[string]any{"cookie_duration": 366}), 400, "cookie_duration must be a whole number of days from 1 to 365", ""},
		// programs
		{"programs without a header", req{"GET", "/api/v1/cli/programs", nil, nil}, 401, "Authentication required", ""},
		{"programs with an unknown token", req{"GET", "/api/v1/cli/programs", nil, bearer("pt_cli_nope")}, 401, "invalid or expired token", ""},
		// status and test-event (program-key routes)
		{"status without a header", req{"GET", "/api/v1/cli/status", nil, nil}, 401, "Missing or malformed Authorization header; expected Bearer token", ""},
		{"status with a malformed header", req{"GET", "/api/v1/cli/status", nil, map[string]string{"Authorization": "Token x"}}, 401, "Missing or malformed Authorization header; expected Bearer token", ""},
		{"status with an empty token", req{"GET", "/api/v1/cli/status", nil, map[string]string{"Authorization": "Bearer  "}}, 401, "Missing API token", ""},
		{"status with an unknown key", req{"GET", "/api/v1/cli/status", nil, bearer("aff_nope")}, 401, "Invalid API token", ""},
		{"status of another program", req{"GET", "/api/v1/cli/status?program_id=" + itoa(other.programID), nil, bearer(w.liveKey)}, 403, "program_id does not match the API key", ""},
		{"status of a placeholder program", req{"GET", "/api/v1/cli/status?program_id=undefined", nil, bearer(w.liveKey)}, 403, "program_id does not match the API key", ""},
		{"test-event without a header", req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "click"}, nil}, 401, "Missing or malformed Authorization header; expected Bearer token", ""},
		{"test-event with an unknown key", req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "click"}, bearer("aff_nope")}, 401, "Invalid API token", ""},
		{"test-event of an unknown type", req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "purchase"}, bearer(w.liveKey)}, 400, "Invalid event_type: purchase. Valid: click, lead, sale", ""},
		{"test-event without a type", req{"POST", "/api/v1/cli/test-event", map[string]any{}, bearer(w.liveKey)}, 400, "Invalid event_type: null. Valid: click, lead, sale", ""},
		{"test-event with a number", req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": 5}, bearer(w.liveKey)}, 400, "Invalid event_type: 5. Valid: click, lead, sale", ""},
		{"test-event with chain as an event type", req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "chain"}, bearer(w.liveKey)}, 400, "Invalid event_type: chain. Valid: click, lead, sale", ""},
		{"test-event of another program", req{"POST", "/api/v1/cli/test-event", map[string]any{"program_id": other.programID, "event_type": "click"}, bearer(w.liveKey)}, 403, "program_id does not match the API key", ""},
		// stripe-connect
		{"stripe-connect is retired", req{"POST", "/api/v1/cli/stripe-connect", map[string]any{"program_id": w.programID}, bearer(w.liveKey)}, 410, ledger.MsgCLIStripeRetired, ""},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			r := do(t, b.app, c.r)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Raw)
			}
			assertPlatformError(t, r, c.status, statusName(c.status), c.message, "")
			if c.details != "" {
				assertDetailsCode(t, r, c.details)
			}
		})
	}
	// The expired case needs the clock, so it runs last.
	t.Run("callback of an expired session", func(t *testing.T) {
		b.clock.Set(b.clock.Now().Add(6 * time.Minute))
		assertPlatformError(t, do(t, b.app, callbackReq(expired, b.iss.Token(t, "sub-owner", b.ownerEmail(t, w)))), 400, "BadRequestError", "Session expired", "")
	})
	// Nothing was created by the refused inits.
	var programs int
	b.db.QueryRow(`SELECT count(*) FROM programs`).Scan(&programs)
	if programs != 2 {
		t.Fatalf("%d programs after refused inits", programs)
	}
}

func TestCLIRetiredKey(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/key-rotation",
		map[string]any{"deadline": formatTime(b.clock.Now().Add(-time.Minute))}, operator()}), 200)
	for _, r := range []req{
		{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)},
		{"POST", "/api/v1/cli/test-event", map[string]any{"type": "chain"}, bearer(w.liveKey)},
	} {
		resp := do(t, b.app, r)
		e, _ := resp.Body["error"].(map[string]any)
		if resp.Status != 401 || e["code"] != "api_key_rotation_required" || resp.Header.Get("Sunset") == "" {
			t.Fatalf("%s %s with a retired key: %d %s", r.method, r.path, resp.Status, resp.Raw)
		}
	}
}

func TestCLIServerErrors(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	token := b.login(t, "sub-owner", b.ownerEmail(t, w))
	state := b.start(t)
	cases := []struct {
		desc  string
		tweak func(srv *Server, gone *postgres.DB)
		r     req
		what  string
	}{
		{"auth/start", func(s *Server, g *postgres.DB) { s.svc.CLILogin = postgres.NewCLIService(g) },
			req{"POST", "/api/v1/cli/auth/start", nil, nil}, "Failed to start auth session"},
		{"auth/callback", func(s *Server, g *postgres.DB) { s.svc.CLILogin = postgres.NewCLIService(g) },
			callbackReq(state, b.iss.Token(t, "sub-owner", b.ownerEmail(t, w))), "Auth callback failed"},
		{"auth/poll", func(s *Server, g *postgres.DB) { s.svc.CLILogin = postgres.NewCLIService(g) },
			pollReq(state), "Failed to poll auth session"},
		{"init", func(s *Server, g *postgres.DB) { s.svc.Programs = postgres.NewProgramService(g) },
			req{"POST", "/api/v1/cli/init", map[string]any{"name": "A", "domain": "a.example", "commission_type": "percent", "commission_rate": 5}, bearer(token)},
			"Failed to create program"},
		{"programs", func(s *Server, g *postgres.DB) { s.svc.CLI = postgres.NewCLIService(g) },
			req{"GET", "/api/v1/cli/programs", nil, bearer(token)}, "Failed to list programs"},
		{"status", func(s *Server, g *postgres.DB) { s.svc.CLI = postgres.NewCLIService(g) },
			req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}, "Failed to get status"},
		{"test-event", func(s *Server, g *postgres.DB) {
			s.svc.Synthetic.(*ledger.Synthetic).Store = postgres.NewSyntheticStore(g)
		}, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "sale"}, bearer(w.liveKey)}, "Failed to process test event"},
		{"test-event chain", func(s *Server, g *postgres.DB) {
			s.svc.Synthetic.(*ledger.Synthetic).Store = postgres.NewSyntheticStore(g)
		}, req{"POST", "/api/v1/cli/test-event", map[string]any{"type": "chain"}, bearer(w.liveKey)}, "Failed to run synthetic chain"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			srv := b.brokenEdge(t, c.tweak)
			assertCLI500(t, do(t, srv.App(), c.r), c.what)
		})
	}
}

func TestCLIRequestIDPlacement(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	status := req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}

	t.Run("status 200 carries none", func(t *testing.T) {
		r := do(t, b.app, status)
		if r.Status != 200 || r.Header.Get("X-Request-ID") != "" || r.Header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("%d, X-Request-ID %q: %s", r.Status, r.Header.Get("X-Request-ID"), r.Raw)
		}
	})
	t.Run("status 401 carries none", func(t *testing.T) {
		r := do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer("aff_nope")})
		if r.Status != 401 || r.Header.Get("X-Request-ID") != "" {
			t.Fatalf("%d, X-Request-ID %q", r.Status, r.Header.Get("X-Request-ID"))
		}
	})
	t.Run("status 500 carries it, at the end of the message and in details", func(t *testing.T) {
		srv := b.brokenEdge(t, func(s *Server, g *postgres.DB) { s.svc.CLI = postgres.NewCLIService(g) })
		assertCLI500(t, do(t, srv.App(), status), "Failed to get status")
	})
	t.Run("other CLI routes carry it on every answer", func(t *testing.T) {
		for _, r := range []req{
			{"POST", "/api/v1/cli/auth/start", nil, nil},
			{"GET", "/api/v1/cli/programs", nil, nil},
			{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "lead"}, bearer(w.liveKey)},
		} {
			if resp := do(t, b.app, r); resp.Header.Get("X-Request-ID") == "" {
				t.Fatalf("%s %s (%d) without X-Request-ID", r.method, r.path, resp.Status)
			}
		}
	})
	t.Run("status 429 carries none", func(t *testing.T) {
		// The CLI bucket is shared by the family: 60 a minute per key.
		for i := 0; i < limitCLI; i++ {
			if r := do(t, b.app, status); r.Status != 200 && r.Status != 429 {
				t.Fatalf("request %d: %d", i, r.Status)
			}
		}
		r := do(t, b.app, status)
		e, _ := r.Body["error"].(map[string]any)
		if r.Status != 429 || r.Header.Get("X-Request-ID") != "" || e["code"] != "rate_limited" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%d, X-Request-ID %q: %s", r.Status, r.Header.Get("X-Request-ID"), r.Raw)
		}
	})
}

func TestCLIRateLimit(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	// Status and test-event share the key's bucket of 60 a minute.
	for i := 0; i < limitCLI/2; i++ {
		mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}), 200)
		mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "lead"}, bearer(w.liveKey)}), 200)
	}
	var leads int
	b.db.QueryRow(`SELECT count(*) FROM leads WHERE program_id = $1`, w.programID).Scan(&leads)
	r := do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "lead"}, bearer(w.liveKey)})
	e, _ := r.Body["error"].(map[string]any)
	if r.Status != 429 || e["code"] != "rate_limited" || e["retry_after_seconds"] == nil || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("61st call: %d %s", r.Status, r.Raw)
	}
	var after int
	b.db.QueryRow(`SELECT count(*) FROM leads WHERE program_id = $1`, w.programID).Scan(&after)
	if after != leads {
		t.Fatal("a refused call recorded a test event")
	}
	// Another key has its own bucket; the next minute the key is welcome.
	mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer(other.liveKey)}), 200)
	b.clock.Set(b.clock.Now().Add(time.Minute))
	mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}), 200)
}

func TestCLIInitProgramsStatus(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	token := b.login(t, "sub-owner", b.ownerEmail(t, w))

	// The reference CLI sends advertiser_id null when it has none.
	r := do(t, b.app, req{"POST", "/api/v1/cli/init", map[string]any{
		"name": "Acme Cloud", "domain": "Cloud.Acme.example", "commission_type": "recurring_percent", "commission_rate": 30,
		"duration_months": 12, "cookie_duration": 60, "advertiser_id": nil, "program_slug": "ignored"}, bearer(token)})
	d := mustOK(t, r, 201)
	programID := id(d["program_id"])
	if d["name"] != "Acme Cloud" || d["domain"] != "cloud.acme.example" || d["commission_type"] != "recurring_percent" ||
		d["commission_rate"] != float64(30) || d["duration_months"] != float64(12) || d["cookie_duration"] != float64(60) ||
		id(d["advertiser_id"]) != w.workspaceID || !strings.HasPrefix(d["api_token_masked"].(string), "aff_****") {
		t.Fatalf("init %s", r.Raw)
	}
	if strings.Contains(string(r.Raw), `"api_key"`) || strings.Contains(string(r.Raw), "aff_") && !strings.Contains(string(r.Raw), "aff_****") {
		t.Fatalf("init returned a key: %s", r.Raw)
	}
	// advertiser_id as a string of digits names the same workspace.
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/init", map[string]any{
		"name": "Acme Two", "domain": "two.example", "commission_type": "fixed", "commission_rate": 25,
		"advertiser_id": strconv.FormatInt(w.workspaceID, 10)}, bearer(token)}), 201)

	r = do(t, b.app, req{"GET", "/api/v1/cli/programs", nil, bearer(token)})
	if r.Status != 200 {
		t.Fatalf("programs %s", r.Raw)
	}
	list, _ := r.Body["data"].([]any)
	if len(list) != 3 {
		t.Fatalf("programs %s", r.Raw)
	}
	want := []struct {
		id                 int64
		name, commission   string
		partners           float64
		wantKeysInEveryRow []string
	}{
		{w.programID, "Acme Pro", "30% one-time", 1, nil},
		{programID, "Acme Cloud", "30% recurring (12 months)", 0, nil},
		{0, "Acme Two", "25.00 USD one-time", 0, nil},
	}
	for i, item := range list {
		p := item.(map[string]any)
		if keys(p) != "commission,created_at,domain,id,name,partners,status" {
			t.Fatalf("program fields %s", keys(p))
		}
		if (want[i].id != 0 && id(p["id"]) != want[i].id) || p["name"] != want[i].name || p["commission"] != want[i].commission ||
			p["partners"] != want[i].partners || p["status"] != "active" {
			t.Fatalf("program %d = %v", i, p)
		}
	}

	// The owner generates the new program's key (the CLI never sees it at
	// init), and status answers for it.
	key := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(programID) + "/api-key", nil, bearer(w.ownerToken)}), 200)["api_key"].(string)
	r = do(t, b.app, req{"GET", "/api/v1/cli/status?program_id=" + itoa(programID), nil, bearer(key)})
	st := mustOK(t, r, 200)
	if keys(st) != "active_partners,dns_verified,domain,name,pending_commissions,program_id,recent_events,stripe_charges_enabled,stripe_connected" {
		t.Fatalf("status fields %s", keys(st))
	}
	if id(st["program_id"]) != programID || st["name"] != "Acme Cloud" || st["stripe_connected"] != false ||
		st["active_partners"] != float64(0) || st["pending_commissions"] != float64(0) {
		t.Fatalf("status %s", r.Raw)
	}
	recent := st["recent_events"].(map[string]any)
	if keys(recent) != "clicks_24h,leads_24h,sales_24h" || recent["clicks_24h"] != float64(0) {
		t.Fatalf("recent events %v", recent)
	}

	// Status counts what the program's integration sent, never the CLI's
	// own test events; a connected processor shows.
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/track/click", map[string]any{"affiliate_url": landing(w)}, fromIP("198.51.100.7")}), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "sale"}, bearer(w.liveKey)}), 200)
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/processor-account", map[string]any{"account_id": "acct_1"}, operator()}), 200)
	b.drain(t)
	st = mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}), 200)
	recent = st["recent_events"].(map[string]any)
	if recent["clicks_24h"] != float64(1) || recent["sales_24h"] != float64(0) || st["stripe_connected"] != true || st["active_partners"] != float64(1) {
		t.Fatalf("status after traffic %v", st)
	}
}

func TestCLITestEventsAndChain(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)

	for _, typ := range []string{"click", "lead", "sale"} {
		// The reference CLI sends its program_id along.
		r := do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"program_id": strconv.FormatInt(w.programID, 10), "event_type": typ}, bearer(w.liveKey)})
		d := mustOK(t, r, 200)
		if keys(d) != "attributed,event_id,event_type,message,received,test" || d["event_type"] != typ || d["received"] != true ||
			d["attributed"] != false || d["event_id"] == "" {
			t.Fatalf("%s: %s", typ, r.Raw)
		}
	}

	r := do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"type": "chain"}, bearer(w.liveKey)})
	d := mustOK(t, r, 200)
	verdict, _ := d["verdict"].(map[string]any)
	if d["type"] != "chain" || d["attributed"] != true || !strings.HasPrefix(d["short_code"].(string), "synthetic-"+itoa(w.programID)+"-") ||
		!strings.HasPrefix(d["customer_key"].(string), "synthetic_chain_") ||
		verdict["click"] != "attributed" || verdict["lead"] != "attributed" || verdict["sale"] != "attributed" {
		t.Fatalf("chain %s", r.Raw)
	}
	// The chain's click went the click endpoint's way: acknowledged once
	// in the Redis queue with its click:<id> record (the single test click
	// too), and no worker has run: the lead resolved the click from its
	// record and wrote its row, as leads do for clicks still in the queue.
	clickID := d["click_id"].(string)
	if _, clicks, records := b.queued(t); clicks != 2 || records != 2 {
		t.Fatalf("after the chain: %d queued clicks, %d records", clicks, records)
	}
	b.drain(t)
	row := b.row(t, clickID)
	if !row.IsTest {
		t.Fatalf("the chain's click is not a test click: %+v", row)
	}
	// Nothing of it pays or shows.
	var commissions, fees int
	b.db.QueryRow(`SELECT count(*) FROM commissions WHERE program_id = $1`, w.programID).Scan(&commissions)
	b.db.QueryRow(`SELECT count(*) FROM platform_fees WHERE program_id = $1`, w.programID).Scan(&fees)
	if commissions+fees != 0 {
		t.Fatalf("%d commissions, %d fees", commissions, fees)
	}
	lr := do(t, b.app, req{"GET", "/api/tracking/events/" + itoa(w.programID), nil, bearer(w.ownerToken)})
	if events, _ := lr.Body["data"].([]any); len(events) != 0 {
		t.Fatalf("the listing shows test events: %s", lr.Raw)
	}
	// The test partner is not a partner of the program in the CLI's eyes.
	st := mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/status", nil, bearer(w.liveKey)}), 200)
	if st["active_partners"] != float64(1) {
		t.Fatalf("status counts the test partner: %v", st)
	}
}

func TestCLIChainCap(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	chain := req{"POST", "/api/v1/cli/test-event", map[string]any{"type": "chain"}, bearer(w.liveKey)}
	for i := 0; i < ledger.ChainCapRuns; i++ {
		if d := mustOK(t, do(t, b.app, chain), 200); d["attributed"] != true {
			t.Fatalf("run %d: %v", i+1, d)
		}
		b.clock.Set(b.clock.Now().Add(time.Minute))
	}
	// The operator disables the test link; the 11th run refreshes the
	// fixture (the link is active again), then the cap refuses it.
	var linkID int64
	b.db.QueryRow(`SELECT id FROM links WHERE program_id = $1 AND is_test`, w.programID).Scan(&linkID)
	mustOK(t, do(t, b.app, req{"PATCH", "/api/operator/v1/links/" + itoa(linkID), map[string]any{"active": false}, operator()}), 200)
	r := do(t, b.app, chain)
	if r.Status != 429 {
		t.Fatalf("11th run: %d %s", r.Status, r.Raw)
	}
	if _, hasData := r.Body["data"]; hasData {
		t.Fatalf("not the typed envelope: %s", r.Raw)
	}
	e := r.Body["error"].(map[string]any)
	if e["code"] != "rate_limited" || e["message"] != "Too many synthetic chains (max 10/program/hour)." ||
		e["status"] != float64(429) || e["retry_after_seconds"] != float64(50*60) || r.Header.Get("Retry-After") != "3000" {
		t.Fatalf("11th run: %s (Retry-After %q)", r.Raw, r.Header.Get("Retry-After"))
	}
	var active bool
	b.db.QueryRow(`SELECT active FROM links WHERE id = $1`, linkID).Scan(&active)
	if !active {
		t.Fatal("the fixture was not refreshed before the cap refused the run")
	}
	var runs int
	b.db.QueryRow(`SELECT count(*) FROM synthetic_chains WHERE program_id = $1`, w.programID).Scan(&runs)
	if runs != ledger.ChainCapRuns {
		t.Fatalf("%d runs recorded", runs)
	}
	// Single test events are not capped.
	mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/test-event", map[string]any{"event_type": "click"}, bearer(w.liveKey)}), 200)
}

func TestCLILoginPage(t *testing.T) {
	b := setupCLI(t)
	state := mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/auth/start", nil, nil}), 200)["state"].(string)
	r := do(t, b.app, req{"GET", "/cli/login?state=" + url.QueryEscape(state), nil, nil})
	page := string(r.Raw)
	csp := r.Header.Get("Content-Security-Policy")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(csp, "script-src 'nonce-") || !strings.Contains(csp, "connect-src 'self' "+b.iss.URL) {
		t.Fatalf("page headers %v", r.Header)
	}
	for _, want := range []string{`data-state="` + state + `"`, `data-issuer="` + b.iss.URL + `"`, `data-client-id="` + testissuer.ClientID + `"`,
		`data-redirect-uri="https://track.example/cli/login"`, `data-callback="/api/v1/cli/auth/callback"`, `id="signin"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("page lacks %s", want)
		}
	}
	// Escaped, whatever the state says.
	r = do(t, b.app, req{"GET", "/cli/login?state=" + url.QueryEscape(`"><script>alert(1)</script>`), nil, nil})
	if strings.Contains(string(r.Raw), "<script>alert(1)") {
		t.Fatal("the state is not escaped")
	}
	if !strings.Contains(string(r.Raw), "unknown, used or expired") || strings.Contains(string(r.Raw), `id="signin"`) {
		t.Fatalf("page of an unknown state: %s", r.Raw)
	}
	r = do(t, b.app, req{"GET", "/cli/login", nil, nil})
	if !strings.Contains(string(r.Raw), "partnertrack login</code>, which puts") {
		t.Fatalf("page without state: %s", r.Raw)
	}
	// Without a provider the page says so, and the callback answers 503
	// as sign-in does.
	srv := b.brokenEdge(t, func(s *Server, _ *postgres.DB) { s.svc.Identity = nil })
	r = do(t, srv.App(), req{"GET", "/cli/login?state=abc", nil, nil})
	if !strings.Contains(string(r.Raw), "Sign-in is not configured") || strings.Contains(string(r.Raw), `id="signin"`) {
		t.Fatalf("page without a provider: %s", r.Raw)
	}
	r = do(t, srv.App(), callbackReq(b.start(t), "x"))
	if e, _ := r.Body["error"].(map[string]any); r.Status != 503 || !strings.HasPrefix(e["message"].(string), msgSignInNotConfigured) {
		t.Fatalf("callback without a provider: %d %s", r.Status, r.Raw)
	}
}

// TestCLILoginBoundToTerminal: a login link sent to someone else is of no
// use to whoever started it. The page shows the code, the starting client
// and time, and the callback completes only a login the person confirmed;
// a client that sent a code challenge polls with its verifier, so the
// state alone gets nothing (issue 21 item 5).
func TestCLILoginBoundToTerminal(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	email := b.ownerEmail(t, w)
	verifier := "verifier-kept-by-the-terminal-0123456789-abcdefghij"
	r := do(t, b.app, req{"POST", "/api/v1/cli/auth/start",
		map[string]any{"code_challenge": ledger.CodeChallengeS256(verifier), "code_challenge_method": "S256"},
		map[string]string{"User-Agent": "partnertrack-cli/9.9 <linux>"}})
	start := mustOK(t, r, 200)
	state, code := start["state"].(string), start["user_code"].(string)
	if len(code) != 9 || code[4] != '-' || strings.Trim(code[:4]+code[5:], "BCDFGHJKLMNPQRSTVWXZ") != "" {
		t.Fatalf("user_code = %q", code)
	}

	page := string(do(t, b.app, req{"GET", "/cli/login?state=" + url.QueryEscape(state), nil, nil}).Raw)
	for _, want := range []string{code, "partnertrack-cli/9.9 &lt;linux&gt;", "Started " + b.clock.Now().UTC().Format("2006-01-02 15:04"),
		`id="confirm-code"`, `data-confirm="/api/v1/cli/auth/confirm"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("page lacks %s: %s", want, page)
		}
	}

	tok := b.iss.Token(t, "sub-owner", email)
	for _, tc := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"state": state}, ledger.MsgCLIConfirmFields},
		{map[string]any{"user_code": code}, ledger.MsgCLIConfirmFields},
		{map[string]any{"state": state, "user_code": "BBBB-BBBB"}, ledger.MsgCLIUserCodeMismatch},
	} {
		r := do(t, b.app, req{"POST", "/api/v1/cli/auth/confirm", tc.body, nil})
		assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
	}
	assertPlatformError(t, do(t, b.app, confirmReq("no-such-state", code)), 404, "NotFoundError", ledger.MsgCLISessionNotFoundUsed, "")
	mustOK(t, do(t, b.app, confirmReq(state, strings.ToLower(code))), 200)
	mustOK(t, do(t, b.app, callbackReq(state, tok)), 200)

	// The state alone, or a wrong verifier, gets nothing; the verifier
	// gets the token once.
	for _, path := range []string{"/api/v1/cli/auth/poll?state=" + url.QueryEscape(state),
		"/api/v1/cli/auth/poll?state=" + url.QueryEscape(state) + "&code_verifier=wrong"} {
		r := do(t, b.app, req{"GET", path, nil, nil})
		assertPlatformError(t, r, 403, "ForbiddenError", ledger.MsgCLIVerifierMismatch, "")
	}
	d := mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state) + "&code_verifier=" + verifier, nil, nil}), 200)
	if d["status"] != "complete" || d["token"] == nil {
		t.Fatalf("poll with the verifier: %v", d)
	}

	// A bad challenge is refused at start.
	for _, body := range []map[string]any{
		{"code_challenge": "short"},
		{"code_challenge": 42},
		{"code_challenge": ledger.CodeChallengeS256("x"), "code_challenge_method": "plain"},
		{"code_challenge_method": "S256"},
	} {
		r := do(t, b.app, req{"POST", "/api/v1/cli/auth/start", body, nil})
		if r.Status != 400 {
			t.Fatalf("start with %v: %d %s", body, r.Status, r.Raw)
		}
	}
}

// The contract's callback takes state and id_token alone: a client that
// drives the login without the page (start, callback, poll by state) still
// signs in; the page is where the person confirms the code.
func TestCLICallbackTakesStateAndIDTokenAlone(t *testing.T) {
	b := setupCLI(t)
	w := MustWorld(t, b.app)
	email := b.ownerEmail(t, w)
	start := mustOK(t, do(t, b.app, req{"POST", "/api/v1/cli/auth/start", nil, nil}), 200)
	state := start["state"].(string)
	mustOK(t, do(t, b.app, callbackReq(state, b.iss.Token(t, "sub-owner", email))), 200)
	d := mustOK(t, do(t, b.app, req{"GET", "/api/v1/cli/auth/poll?state=" + url.QueryEscape(state), nil, nil}), 200)
	if d["status"] != "complete" || d["token"] == nil || d["email"] != email {
		t.Fatalf("poll after an unconfirmed callback: %v", d)
	}
}
