package ingest

import (
	"bytes"
	"crypto/sha256"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// mustEmbedToken mints a widget token for email in the world's program.
func mustEmbedToken(t *testing.T, b *testBundle, w world, email string) string {
	t.Helper()
	d := mustOK(t, do(t, b.app, req{"POST", "/api/v1/programs/" + itoa(w.programID) + "/embed-tokens",
		map[string]any{"email": email, "name": "Emma Embed"}, bearer(w.liveKey)}), 201)
	return d["token"].(string)
}

func embedPage(t *testing.T, b *testBundle, token string) response {
	t.Helper()
	return do(t, b.app, req{"GET", "/embed/referrals?token=" + token, nil, nil})
}

// embedPartner is the partner and link the widget enrolled for email.
func embedPartner(t *testing.T, b *testBundle, programID int64, email string) (partnerID, linkID int64, code string) {
	t.Helper()
	if err := b.db.QueryRow(`SELECT p.id, l.id, l.code FROM partners p JOIN links l ON l.partner_id = p.id
		WHERE p.email = $1 AND l.program_id = $2`, email, programID).Scan(&partnerID, &linkID, &code); err != nil {
		t.Fatalf("the widget's partner of %s: %v", email, err)
	}
	return partnerID, linkID, code
}

func TestEmbedTokenCreate(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	path := "/api/v1/programs/" + itoa(w.programID) + "/embed-tokens"

	t.Run("OK", func(t *testing.T) {
		r := do(t, b.app, req{"POST", path, map[string]any{"email": " Emma@Customer.example "}, bearer(w.liveKey)})
		d := mustOK(t, r, 201)
		tok := d["token"].(string)
		if !strings.HasPrefix(tok, "pt_embed_") || d["url"] != "https://track.example/embed/referrals?token="+tok {
			t.Fatalf("answer %s", r.Raw)
		}
		exp, err := time.Parse(time.RFC3339, d["expires_at"].(string))
		if err != nil || !exp.Equal(b.clock.Now().Add(time.Hour).Truncate(time.Millisecond)) {
			t.Fatalf("expires_at %v (now %v)", d["expires_at"], b.clock.Now())
		}
		// Only the hash is stored, with the normalized email.
		sum := sha256.Sum256([]byte(tok))
		if n := countRows(t, b, `SELECT count(*) FROM embed_tokens WHERE token_hash = $1 AND program_id = $2
			AND email = 'emma@customer.example' AND name IS NULL`, sum[:], w.programID); n != 1 {
			t.Fatalf("%d rows of the token's hash", n)
		}
		if n := countRows(t, b, `SELECT count(*) FROM embed_tokens WHERE position($1::bytea IN token_hash) > 0`, []byte(tok)); n != 0 {
			t.Fatal("the token is stored in plain")
		}
	})

	t.Run("OKDeletesExpiredTokens", func(t *testing.T) {
		mustSQL(t, b, `INSERT INTO embed_tokens (token_hash, program_id, email, expires_at) VALUES ('\x01', $1, 'old@x.example', $2)`,
			w.programID, b.clock.Now().Add(-time.Minute))
		mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"email": "emma@customer.example"}, bearer(w.liveKey)}), 201)
		if n := countRows(t, b, `SELECT count(*) FROM embed_tokens WHERE expires_at < $1`, b.clock.Now()); n != 0 {
			t.Fatalf("%d expired tokens left", n)
		}
	})

	for _, tc := range []struct {
		desc    string
		path    string
		body    any
		header  map[string]string
		status  int
		message string
	}{
		{desc: "ErrEmailMissing", body: map[string]any{"name": "A"}, status: 400, message: "email is required and must be a valid email address"},
		{desc: "ErrEmailShape", body: map[string]any{"email": "nope"}, status: 400, message: "email is required and must be a valid email address"},
		{desc: "ErrEmailType", body: map[string]any{"email": 7}, status: 400, message: "email is required and must be a valid email address"},
		{desc: "ErrName", body: map[string]any{"email": "a@b.example", "name": ""}, status: 400, message: "name must be a string of 1 to 200 characters"},
		{desc: "ErrNotJSON", body: "[1]", status: 400, message: "Request body must be a JSON object"},
		{desc: "ErrNoKey", body: map[string]any{"email": "a@b.example"}, header: map[string]string{}, status: 401,
			message: "Missing or malformed Authorization header; expected Bearer token"},
		{desc: "ErrDashboardToken", body: map[string]any{"email": "a@b.example"}, header: bearer(w.ownerToken), status: 401, message: "Invalid API token"},
		{desc: "ErrAnotherProgramsKey", body: map[string]any{"email": "a@b.example"}, header: bearer(other.liveKey), status: 404, message: "program not found"},
		{desc: "ErrNotAProgramID", path: "/api/v1/programs/x/embed-tokens", body: map[string]any{"email": "a@b.example"}, status: 404, message: "program not found"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			before := countRows(t, b, `SELECT count(*) FROM embed_tokens`)
			p, h := path, tc.header
			if tc.path != "" {
				p = tc.path
			}
			if h == nil {
				h = bearer(w.liveKey)
			}
			r := do(t, b.app, req{"POST", p, tc.body, h})
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Raw)
			}
			e, _ := r.Body["error"].(map[string]any)
			if e == nil || e["message"] != tc.message {
				t.Fatalf("error %s, want message %q", r.Raw, tc.message)
			}
			if after := countRows(t, b, `SELECT count(*) FROM embed_tokens`); after != before {
				t.Fatalf("a refused mint stored a token (%d -> %d)", before, after)
			}
		})
	}
}

func TestEmbedPage(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	const email = "emma@customer.example"
	tok := mustEmbedToken(t, b, w, email)

	r := embedPage(t, b, tok)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'nonce-", "style-src 'nonce-",
		"frame-ancestors https://acme.example https://www.acme.example"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || r.Header.Get("X-Frame-Options") != "" {
		t.Errorf("CSP %q, X-Frame-Options %q", csp, r.Header.Get("X-Frame-Options"))
	}
	nonce := csp[strings.Index(csp, "'nonce-")+7:]
	nonce = nonce[:strings.IndexByte(nonce, '\'')]
	if !bytes.Contains(r.Raw, []byte(`<script nonce="`+nonce+`">`)) {
		t.Error("the inline script does not carry the response's nonce")
	}
	// First open: enrolled in the default group with a link, welcomed.
	partnerID, linkID, code := embedPartner(t, b, w.programID, email)
	if n := countRows(t, b, `SELECT count(*) FROM enrollments e JOIN partner_groups g ON g.id = e.group_id
		WHERE e.program_id = $1 AND e.partner_id = $2 AND e.status = 'active' AND g.is_default`, w.programID, partnerID); n != 1 {
		t.Fatalf("%d active default-group enrollments", n)
	}
	if n := countRows(t, b, `SELECT count(*) FROM partners WHERE id = $1 AND name = 'Emma Embed'`, partnerID); n != 1 {
		t.Error("the partner is not named as the token said")
	}
	page := string(r.Raw)
	for _, want := range []string{`id="welcome"`, "https://acme.example/?aff=" + code, "Acme Pro referral program",
		"You earn 30% of the first sale of each referred customer, approved 30 days after the sale.", `<dd id="clicks">0</dd>`, `<dd id="conversions">0</dd>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}

	// A click and a sale through the link show on the next open, which
	// enrolls nobody again.
	click := mustClick(t, b, w.programID, linkID, partnerID)
	mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_embed", "amount_cents": 10000,
		"click_id": click}, bearer(w.liveKey)}))
	r = embedPage(t, b, tok)
	page = string(r.Raw)
	for _, want := range []string{`<dd id="clicks">1</dd>`, `<dd id="conversions">1</dd>`, `data-currency="USD">$30.00</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page after a click and a sale lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `id="welcome"`) {
		t.Error("a second open welcomes again")
	}
	if n := countRows(t, b, `SELECT count(*) FROM links WHERE partner_id = $1`, partnerID); n != 1 {
		t.Fatalf("%d links after two opens", n)
	}
	// The brand's other partner's numbers and the customer never show.
	for _, leak := range []string{"pat", itoa(w.partnerID) + "@", "txn_embed"} {
		if strings.Contains(page, leak) {
			t.Errorf("page shows %q", leak)
		}
	}
}

// TestEmbedPageFirstOpenOnceUnderConcurrency: ten opens of a new user's
// token race; every one answers 200 and exactly one enrollment, one link
// and one audit row exist.
func TestEmbedPageFirstOpenOnceUnderConcurrency(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	tok := mustEmbedToken(t, b, w, "race@customer.example")
	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := b.app.Test(httptest.NewRequest("GET", "/embed/referrals?token="+tok, nil), -1)
			if err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("open %d: status %d", i, s)
		}
	}
	partnerID, _, _ := embedPartner(t, b, w.programID, "race@customer.example")
	for what, q := range map[string]string{
		"partners":    `SELECT count(*) FROM partners WHERE email = 'race@customer.example' AND $1 > 0`,
		"enrollments": `SELECT count(*) FROM enrollments WHERE partner_id = $1`,
		"links":       `SELECT count(*) FROM links WHERE partner_id = $1`,
		"audit rows":  `SELECT count(*) FROM audit_log WHERE action = 'partner.enrolled_by_embed' AND subject_id = $1`,
	} {
		if n := countRows(t, b, q, partnerID); n != 1 {
			t.Errorf("%d %s, want 1", n, what)
		}
	}
}

func TestEmbedPageRefusals(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	tok := mustEmbedToken(t, b, w, "late@customer.example")
	for _, tc := range []struct {
		desc      string
		token     string
		status    int
		ancestors string
	}{
		{desc: "ErrMissing", token: "", status: 401, ancestors: "frame-ancestors 'none'"},
		{desc: "ErrMalformed", token: "pt_partner_abc", status: 401, ancestors: "frame-ancestors 'none'"},
		{desc: "ErrUnknown", token: "pt_embed_" + strings.Repeat("a", 32), status: 404, ancestors: "frame-ancestors 'none'"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := embedPage(t, b, tc.token)
			if r.Status != tc.status || !strings.Contains(r.Header.Get("Content-Security-Policy"), tc.ancestors) {
				t.Fatalf("status %d, CSP %q", r.Status, r.Header.Get("Content-Security-Policy"))
			}
			if strings.Contains(string(r.Raw), "Acme") {
				t.Fatalf("an error page shows program data: %s", r.Raw)
			}
		})
	}
	t.Run("ErrExpired", func(t *testing.T) {
		b.clock.Set(b.clock.Now().Add(time.Hour))
		r := embedPage(t, b, tok)
		if r.Status != 410 || strings.Contains(string(r.Raw), "Acme") ||
			!strings.Contains(r.Header.Get("Content-Security-Policy"), "frame-ancestors https://acme.example") {
			t.Fatalf("status %d, CSP %q: %s", r.Status, r.Header.Get("Content-Security-Policy"), r.Raw)
		}
		if n := countRows(t, b, `SELECT count(*) FROM partners WHERE email = 'late@customer.example'`); n != 0 {
			t.Fatal("an expired token enrolled its user")
		}
	})
}

// TestEmbedPageKeepsAnEnrollmentsState: a suspended or removed partner is
// shown as such, never re-activated, and gets no link to copy.
func TestEmbedPageKeepsAnEnrollmentsState(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	for _, status := range []string{"suspended", "removed"} {
		t.Run("OK"+status, func(t *testing.T) {
			email := status + "@customer.example"
			tok := mustEmbedToken(t, b, w, email)
			if r := embedPage(t, b, tok); r.Status != 200 { // the first open enrolls
				t.Fatalf("first open: %d", r.Status)
			}
			partnerID, _, code := embedPartner(t, b, w.programID, email)
			mustSQL(t, b, `UPDATE enrollments SET status = $1 WHERE partner_id = $2 AND program_id = $3`, status, partnerID, w.programID)
			r := embedPage(t, b, tok)
			if r.Status != 200 || !strings.Contains(string(r.Raw), `id="status"`) || strings.Contains(string(r.Raw), "?aff="+code) {
				t.Fatalf("status %d: %s", r.Status, r.Raw)
			}
			if n := countRows(t, b, `SELECT count(*) FROM enrollments WHERE partner_id = $1 AND status = $2`, partnerID, status); n != 1 {
				t.Fatalf("the %s enrollment changed", status)
			}
		})
	}
}

// TestEmbedPageOfAPausedProgram: a paused program enrolls nobody; its
// page says so and shows no numbers.
func TestEmbedPageOfAPausedProgram(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	tok := mustEmbedToken(t, b, w, "late@customer.example")
	mustSQL(t, b, `UPDATE programs SET status = 'paused' WHERE id = $1`, w.programID)
	r := embedPage(t, b, tok)
	if r.Status != 200 || !strings.Contains(string(r.Raw), "is not taking new partners") || strings.Contains(string(r.Raw), `id="clicks"`) {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	if n := countRows(t, b, `SELECT count(*) FROM partners WHERE email = 'late@customer.example'`); n != 0 {
		t.Fatal("a paused program enrolled the user")
	}
}

// TestEmbedPageShowsOnlyItsProgram: one user with tokens of two programs
// of two workspaces sees each program's own link and numbers only.
func TestEmbedPageShowsOnlyItsProgram(t *testing.T) {
	b := setup(t)
	p, q := MustWorld(t, b.app), MustWorld(t, b.app)
	mustSQL(t, b, `UPDATE programs SET name = 'Quill' WHERE id = $1`, q.programID)
	const email = "both@customer.example"
	pTok, qTok := mustEmbedToken(t, b, p, email), mustEmbedToken(t, b, q, email)
	embedPage(t, b, pTok)
	embedPage(t, b, qTok)
	pPartner, pLink, pCode := embedPartner(t, b, p.programID, email)
	_, _, qCode := embedPartner(t, b, q.programID, email)
	click := mustClick(t, b, p.programID, pLink, pPartner)
	mustSuccess(t, do(t, b.app, req{"POST", salePath, map[string]any{"transaction_id": "txn_p", "amount_cents": 10000,
		"click_id": click}, bearer(p.liveKey)}))

	qPage := string(embedPage(t, b, qTok).Raw)
	if !strings.Contains(qPage, "Quill referral program") || !strings.Contains(qPage, qCode) ||
		!strings.Contains(qPage, `<dd id="clicks">0</dd>`) || !strings.Contains(qPage, `<dd id="conversions">0</dd>`) {
		t.Fatalf("Q's page:\n%s", qPage)
	}
	for _, leak := range []string{"Acme Pro", pCode, "$30.00"} {
		if strings.Contains(qPage, leak) {
			t.Errorf("Q's page shows P's %q", leak)
		}
	}
	pPage := string(embedPage(t, b, pTok).Raw)
	if !strings.Contains(pPage, `<dd id="clicks">1</dd>`) || strings.Contains(pPage, qCode) {
		t.Fatalf("P's page:\n%s", pPage)
	}
}

// TestEmbedPageShowsNothingOfOtherWorkspaces: the widget greets the user
// by the name the brand gave, never the name another workspace's invite
// or application stored on the partner, and shows no test link.
func TestEmbedPageShowsNothingOfOtherWorkspaces(t *testing.T) {
	b := setup(t)
	w, elsewhere := MustWorld(t, b.app), MustWorld(t, b.app)
	const email = "known@customer.example"
	mustOK(t, do(t, b.app, req{"POST", "/api/operator/v1/programs/" + itoa(elsewhere.programID) + "/partners",
		map[string]any{"email": email, "name": "Secret Elsewhere Name"}, operator()}), 201)
	tok := mustEmbedToken(t, b, w, email)
	first := string(embedPage(t, b, tok).Raw) // enrolls and greets
	if !strings.Contains(first, "Welcome, Emma Embed") || strings.Contains(first, "Secret Elsewhere Name") {
		t.Fatalf("the first open greets by another workspace's name:\n%s", first)
	}
	partnerID, _, code := embedPartner(t, b, w.programID, email)
	mustSQL(t, b, `INSERT INTO links (program_id, partner_id, code, is_test) VALUES ($1, $2, 'test-only-link', true)`, w.programID, partnerID)
	page := string(embedPage(t, b, tok).Raw)
	if !strings.Contains(page, code) || strings.Contains(page, "test-only-link") || strings.Contains(page, "Secret Elsewhere Name") {
		t.Fatalf("the widget shows another workspace's name or a test link:\n%s", page)
	}
}
