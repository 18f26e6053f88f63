package reliability

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestIsolationEmbed: the referral widget (issue 26) keeps programs apart.
// A's program keys (live and test) cannot mint a token for B's program
// (404) and B's owner's dashboard token is no program key (401); nothing
// is stored for B. One person with tokens of both programs sees, through
// A's token, nothing of B's numbers, name, domain or links, and through
// B's token B's numbers (the rows are there to leak).
func TestIsolationEmbed(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/embed")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)
	email := "embed-" + pa + "@customer.example"

	before := st.count(t, `SELECT count(*) FROM embed_tokens WHERE program_id = $1`, b.ProgramID)
	p := &prober{t: t, e: e, leaks: []string{"pt_embed_"}}
	for who, tok := range map[string]string{"A's live key": a.LiveKey, "A's test key": a.TestKey} {
		p.probe(who, req{method: "POST", path: "/api/v1/programs/" + pb + "/embed-tokens", token: tok,
			body: map[string]any{"email": email}}, 404)
	}
	p.probe("B's owner", req{method: "POST", path: "/api/v1/programs/" + pb + "/embed-tokens", token: b.OwnerToken,
		body: map[string]any{"email": email}}, 401)
	if after := st.count(t, `SELECT count(*) FROM embed_tokens WHERE program_id = $1`, b.ProgramID); after != before {
		t.Errorf("refused mints stored %d tokens for B", after-before)
	}

	mint := func(w world) string {
		u := e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/embed-tokens", token: w.LiveKey,
			body: map[string]any{"email": email}}).data()["url"].(string)
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tok := parsed.Query().Get("token")
		secret("embed token", tok)
		return tok
	}
	open := func(tok string) string {
		return string(e.must(t, 200, req{method: "GET", path: "/embed/referrals?token=" + url.QueryEscape(tok),
			header: map[string]string{"X-Forwarded-For": nextIP()}}).Raw)
	}
	aTok, bTok := mint(a), mint(b)
	open(aTok)
	open(bTok)

	// B's numbers for the person, marker counts no other test writes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var bPartner int64
	if err := st.db.QueryRowContext(ctx, `SELECT id FROM partners WHERE email = $1`, email).Scan(&bPartner); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors, leads)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, 0, 876543, 1, 0)`, b.ProgramID, bPartner); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, `
		INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, commission_minor)
		VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, 0, 'EUR', 4321, 9876543)`, b.ProgramID, bPartner); err != nil {
		t.Fatal(err)
	}
	var bCode string
	if err := st.db.QueryRowContext(ctx, `SELECT code FROM links WHERE program_id = $1 AND partner_id = $2`, b.ProgramID, bPartner).Scan(&bCode); err != nil {
		t.Fatal(err)
	}
	bName := "Program " + strings.TrimPrefix(strings.Split(b.OwnerEmail, "@")[0], "owner")
	bDomain := "brand" + strings.TrimPrefix(strings.Split(b.OwnerEmail, "@")[0], "owner") + ".example"

	aPage := open(aTok)
	for _, leak := range []string{"876543", "4321", "98,765.43", bCode, bName + " ", bDomain, b.Code} {
		if strings.Contains(aPage, leak) {
			t.Errorf("A's widget shows B's %q:\n%s", leak, aPage)
		}
	}
	bPage := open(bTok)
	for _, want := range []string{"876543", "4321", "€98,765.43", bCode} {
		if !strings.Contains(bPage, want) {
			t.Errorf("B's widget lacks its own %q:\n%s", want, bPage)
		}
	}
	sc.note("%d mints for B's program with A's keys and B's dashboard token refused; A's widget shows nothing of B", p.refused)
}
