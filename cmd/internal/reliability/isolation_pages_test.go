package reliability

import (
	"bufio"
	"bytes"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ingest/oidc/testissuer"
)

// Helpers of the scenarios that drive the dashboard's web pages
// (isolation/dashboard-pages, the hostile page targets).

// The pages' session cookies (ingest/web/session.go).
const (
	brandCookie   = "pt_session"
	partnerCookie = "pt_partner_session"
)

// pageRoutesFile is the list of every page route under /app/ and
// /partner/; TestPageRoutesListed in ingest/web checks it against what the
// pages register, so a route added there is probed here.
const pageRoutesFile = "../../../ingest/web/testdata/page_routes.txt"

// pageRoute is one route of the pages: its method and fiber pattern.
type pageRoute struct{ method, pattern string }

func (r pageRoute) String() string { return r.method + " " + r.pattern }

// pageRoutes reads the list of page routes.
func pageRoutes(t *testing.T) []pageRoute {
	t.Helper()
	f, err := os.Open(pageRoutesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pageRoute
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		method, pattern, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", pageRoutesFile, line)
		}
		out = append(out, pageRoute{method, pattern})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no route", pageRoutesFile)
	}
	return out
}

var routeParam = regexp.MustCompile(`:([A-Za-z]+)`)

// params are the parameter names of a pattern, in order.
func (r pageRoute) params() []string {
	var out []string
	for _, m := range routeParam.FindAllStringSubmatch(r.pattern, -1) {
		out = append(out, m[1])
	}
	return out
}

// fill puts ids in the pattern's parameters; a parameter ids lacks fails
// the test (a new kind of id must be given one).
func (r pageRoute) fill(t *testing.T, ids map[string]string) string {
	t.Helper()
	return routeParam.ReplaceAllStringFunc(r.pattern, func(m string) string {
		v, ok := ids[m[1:]]
		if !ok {
			t.Fatalf("%s: no id for :%s: give the scenario one", r, m[1:])
		}
		return v
	})
}

// pageClient is a browser without a cookie jar: each request carries the
// cookies it is given and redirects are not followed, so that every
// answer is seen. Pages are not in the OpenAPI document, so these
// exchanges are not checked against it.
type pageClient struct {
	base string
	http *http.Client
}

func newPageClient(e *edge) *pageClient {
	return &pageClient{base: "http://" + e.Addr, http: &http.Client{
		Timeout:       60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// pageReq is one request of a browser.
type pageReq struct {
	method, path string
	cookies      map[string]string
	form         url.Values // sent urlencoded (nil: no form)
	// raw is a body sent as is with contentType (none when empty), in
	// place of form.
	raw         []byte
	contentType string
}

type pageReply struct {
	Status int
	Header http.Header
	Body   string
}

func (r pageReply) location() string { return r.Header.Get("Location") }

// String is the answer's status, where it redirects, its title and the
// messages it shows (the whole body only when it is not a page).
func (r pageReply) String() string {
	s := itoa(int64(r.Status)) + " " + r.location()
	if m := pageTitle.FindStringSubmatch(r.Body); m != nil {
		s += " «" + m[1] + "»"
		for _, m := range pageMessages.FindAllStringSubmatch(r.Body, 5) {
			s += " [" + m[1] + "]"
		}
		return s
	}
	body := r.Body
	if len(body) > 600 {
		body = body[:600] + "…"
	}
	return s + " " + body
}

var (
	pageTitle    = regexp.MustCompile(`<title>([^<]*)</title>`)
	pageMessages = regexp.MustCompile(`class="(?:form-error|field-error|notice)"[^>]*>([^<]*)<`)
)

func (c *pageClient) call(r pageReq) (pageReply, error) {
	var body io.Reader
	ct := r.contentType
	switch {
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	case r.form != nil:
		body = strings.NewReader(r.form.Encode())
		ct = "application/x-www-form-urlencoded"
	}
	hr, err := http.NewRequest(r.method, c.base+r.path, body)
	if err != nil {
		return pageReply{}, err
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	for name, v := range r.cookies {
		hr.AddCookie(&http.Cookie{Name: name, Value: v})
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return pageReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return pageReply{}, err
	}
	return pageReply{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}, nil
}

// must sends r and fails the test unless it answers status.
func (c *pageClient) must(t *testing.T, status int, r pageReq) pageReply {
	t.Helper()
	rep, err := c.call(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	if rep.Status != status {
		t.Fatalf("%s %s: %s, want %d", r.method, r.path, rep, status)
	}
	return rep
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the form token of a session from its area's home page, as
// a browser has it.
func (c *pageClient) csrfOf(t *testing.T, cookie, token string) string {
	t.Helper()
	home := "/app/"
	if cookie == partnerCookie {
		home = "/partner/"
	}
	rep := c.must(t, 200, pageReq{method: "GET", path: home, cookies: map[string]string{cookie: token}})
	m := csrfInput.FindStringSubmatch(rep.Body)
	if m == nil {
		t.Fatalf("no csrf field on %s: %s", home, rep)
	}
	return m[1]
}

// A page that says what went wrong: the error page, a form shown again
// with the refusal next to a field or above the form, or a section that
// says why it is not open to the person (a notice).
var pageMessage = regexp.MustCompile(`class="(form-error|field-error|notice)"`)

// pageProblem says what is wrong with a refusal of a page route (""
// when it is an HTML page that says why): never a 5xx, never a JSON
// envelope, always a message.
func pageProblem(rep pageReply) string {
	switch {
	case rep.Status >= 500:
		return "a 5xx"
	case rep.Status < 400:
		return "not a refusal"
	case !strings.HasPrefix(rep.Header.Get("Content-Type"), "text/html"):
		return "not an HTML page (" + rep.Header.Get("Content-Type") + ")"
	case strings.HasPrefix(strings.TrimSpace(rep.Body), "{"):
		return "a JSON envelope"
	case !pageMessage.MatchString(rep.Body):
		return "no message on the page"
	}
	return ""
}

// toLogin reports whether rep sends the browser to the sign-in page.
func toLogin(rep pageReply) bool {
	loc := rep.location()
	return (rep.Status == 302 || rep.Status == 303) && (loc == "/login" || strings.HasPrefix(loc, "/login?"))
}

// pageWorld is what the page isolation scenario gives a world: its
// program renamed and published, a group, an invite, an application, two
// approved commissions paid out in a payout marked paid, and a webhook.
// ids name each by the page routes' parameter names.
type pageWorld struct {
	world
	name, ref, hook, group, invitee, applicant, partnerEmail string
	ids                                                      map[string]string
}

// pageData provisions a pageWorld through the API; tag ("alpha", "bravo")
// starts every value it stores, so that a page showing it is caught.
func pageData(t *testing.T, st *stack, e *edge, w world, tag, partnerToken string) pageWorld {
	t.Helper()
	pid := itoa(w.ProgramID)
	base := "/api/v1/programs/" + pid
	title := strings.ToUpper(tag[:1]) + tag[1:]
	pw := pageWorld{world: w, name: title + " pages " + pid, ref: tag + "-ref-" + pid,
		hook: tag + "-pages-hook-" + pid, group: title + " VIP " + pid,
		invitee: tag + "-invitee-" + pid + "@pages.example", applicant: tag + "-applicant-" + pid + "@pages.example"}
	if err := st.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, w.PartnerID).Scan(&pw.partnerEmail); err != nil {
		t.Fatal(err)
	}
	e.must(t, 200, req{method: "PATCH", path: base + "/settings", token: w.OwnerToken,
		body: map[string]any{"name": pw.name, "slug": tag + "-pages-" + pid}})
	group := num(e.must(t, 201, req{method: "POST", path: base + "/groups", token: w.OwnerToken,
		body: map[string]any{"name": pw.group, "commission_rate": 25}}).data()["id"])
	inv := e.must(t, 200, req{method: "POST", path: base + "/invites", token: w.OwnerToken,
		body: map[string]any{"emails": []string{pw.invitee}}}).data()
	invite := num(inv["invited"].([]any)[0].(map[string]any)["id"])
	e.must(t, 202, req{method: "POST", path: "/api/v1/public/programs/" + tag + "-pages-" + pid + "/applications",
		header: map[string]string{"X-Forwarded-For": nextIP()}, body: map[string]any{"name": title + " applicant", "email": pw.applicant}})
	apps := e.must(t, 200, req{method: "GET", path: base + "/applications", token: w.OwnerToken}).Body["data"].([]any)
	app := num(apps[0].(map[string]any)["id"])

	// Money: the partner's payout method, two approved commissions, and
	// a payout of them marked paid with a reference.
	e.must(t, 200, req{method: "PUT", path: "/api/v1/partner/payout-method", token: partnerToken,
		body: map[string]any{"method": "paypal", "details": map[string]any{"email": tag + "-paypal-" + pid + "@paypal.example"}}})
	approvedBalance(t, st, e, w, 2, tag+"-pages")
	commission := int64(st.count(t, `SELECT min(id) FROM commissions WHERE program_id = $1`, w.ProgramID))
	run := e.must(t, 200, req{method: "POST", path: base + "/payouts", token: w.OwnerToken}).data()
	created, _ := run["created"].([]any)
	if len(created) != 1 {
		t.Fatalf("%s's payout run: %v", tag, run)
	}
	payout := num(created[0].(map[string]any)["id"])
	e.must(t, 200, req{method: "POST", path: base + "/payouts/" + itoa(payout) + "/mark-paid", token: w.OwnerToken,
		body: map[string]any{"external_reference": pw.ref}})

	created2 := e.must(t, 201, req{method: "POST", path: base + "/webhooks", token: w.OwnerToken,
		body: map[string]any{"url": "https://93.184.216.34/" + pw.hook, "events": []string{"sale.created"}}}).data()
	secret("webhook signing secret", created2["secret"].(string))
	hook := num(created2["id"])

	pw.ids = map[string]string{
		"id": pid, "cid": itoa(commission), "payoutId": itoa(payout), "webhookId": itoa(hook),
		"partnerId": itoa(w.PartnerID), "inviteId": itoa(invite), "applicationId": itoa(app),
		"groupId": itoa(group), "linkId": itoa(w.LinkID),
	}
	return pw
}

// pageForm is what a form of the route sends, as filled in by someone
// after the program of ids (B's group, B's partner): the form fields the
// page reads, so that a page that forgot a check would act on them.
func pageForm(r pageRoute, ids map[string]string, csrf string) url.Values {
	f := url.Values{"csrf": {csrf}}
	p := r.pattern
	switch {
	case strings.HasSuffix(p, "/applications/:applicationId/approve"), strings.HasSuffix(p, "/partners/:partnerId/group"):
		f.Set("group_id", ids["groupId"])
	case strings.HasSuffix(p, "/reject"), strings.HasSuffix(p, "/mark-failed"):
		f.Set("reason", "taken over")
	case strings.HasSuffix(p, "/mark-paid"):
		f.Set("external_reference", "taken-over")
	case strings.HasSuffix(p, "/groups"), strings.HasSuffix(p, "/groups/:groupId"):
		f.Set("name", "Taken over")
		f.Set("commission_rate", "99")
	case strings.HasSuffix(p, "/invites"):
		f.Set("emails", "taken-over@pages.example")
	case p == "/app/programs/:id/links":
		f.Set("partner_id", ids["partnerId"])
		f.Set("code", "taken-over-"+ids["id"])
	case strings.HasSuffix(p, "/partners/:partnerId/status"):
		f.Set("status", "suspended")
	case strings.HasSuffix(p, "/links/:linkId/status"):
		f.Set("status", "disabled")
	case p == "/app/programs/:id/payouts":
		f.Set("scope", "all")
	case strings.HasSuffix(p, "/settings"):
		f.Set("name", "Taken over")
		f.Set("domain", "taken.example")
		f.Set("currency", "USD")
		f.Set("commission_type", "percent")
		f.Set("commission_rate", "99")
		f.Set("duration_months", "0")
		f.Set("hold_days", "0")
		f.Set("cookie_duration", "30")
		f.Set("lead_auth", "server_required")
		f.Set("timezone", "UTC")
	case strings.HasSuffix(p, "/settings/key"):
		f.Set("mode", "live")
	case strings.HasSuffix(p, "/settings/webhooks"):
		f.Set("url", "https://93.184.216.35/taken-over")
		f["events"] = []string{"sale.created", "commission.created"}
	case p == "/app/programs":
		f.Set("name", "Taken over")
		f.Set("domain", "taken.example")
		f.Set("commission_type", "percent")
		f.Set("commission_rate", "10")
		f.Set("currency", "USD")
	case p == "/partner/programs/:id/links":
		f.Set("code", "taken-over-"+ids["id"])
	case p == "/partner/payouts/programs/:id/request":
		f.Set("currency", "USD")
		f.Set("amount", "1")
	case p == "/partner/payouts/method":
		f.Set("method", "paypal")
		f.Set("paypal_email", "taken-over@paypal.example")
	}
	return f
}

// partnerState renders what is stored of a partner outside any program:
// its payout method, notifications and the invites to its email.
func partnerState(t *testing.T, st *stack, partnerID int64) string {
	t.Helper()
	var s string
	if err := st.db.QueryRow(`SELECT
		COALESCE((SELECT json_agg(row_to_json(m))::text FROM payout_methods m WHERE partner_id = $1), '') ||
		COALESCE((SELECT json_agg(row_to_json(n) ORDER BY n.id)::text FROM notifications n WHERE partner_id = $1), '') ||
		COALESCE((SELECT json_agg(row_to_json(i) ORDER BY i.id)::text FROM partner_invites i
			WHERE i.email = (SELECT lower(email) FROM partners WHERE id = $1)), '')`, partnerID).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIsolationPages: the dashboard's web pages (issue 27) keep brands and
// partners apart, for every page route the pages register (read from
// ingest/web/testdata/page_routes.txt, which ingest/web checks against
// the routes). Brands A and B each have partners, an invite, an
// application, a group, a link, commissions, a paid payout and a webhook;
// partner X of A and partner Y of B are signed in through the test
// issuer, Y has a notification and an invite to A's program. With the
// cookies of A's owner, admin and member (each with its session's form
// token), every GET page and every POST form aimed at B's ids, and at
// B's ids through A's own program, is an HTML error page (403 or 404)
// that shows none of B's values, never a 200 with them, never a 5xx.
// X's cookie on Y's invite and notification and on B's program pages is
// an error page too, and X's own pages show nothing of Y's. A brand
// cookie opens no partner page and a partner cookie no brand page (to
// /login, whichever cookie name carries it); a form sent with the token of
// another session is a 403 that changes nothing; the sign-in page never
// links off-site, whatever its next parameter. B's rows, Y's payout
// method, notifications and invites, and the programs of B's workspace
// are the same before and after, and B's owner and Y do see every value
// the probes look for (the probes can fail).
func TestIsolationPages(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/dashboard-pages")
	st := sharedStack(t)
	iss := testissuer.New(t)
	e := st.startEdge(t, map[string]string{"OIDC_ISSUER_URL": iss.URL, "OIDC_CLIENT_ID": testissuer.ClientID})
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	pc := newPageClient(e)
	routes := pageRoutes(t)
	a, b := mustWorld(t, e.client, nil), mustWorld(t, e.client, nil)
	pa, pb := itoa(a.ProgramID), itoa(b.ProgramID)

	emailOf := func(id int64) string {
		var s string
		if err := st.db.QueryRow(`SELECT email FROM partners WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	x := signInPartnerAt(t, e, iss, "x-pages-"+pa, emailOf(a.PartnerID))
	y := signInPartnerAt(t, e, iss, "y-pages-"+pb, emailOf(b.PartnerID))
	A := pageData(t, st, e, a, "alpha", x)
	B := pageData(t, st, e, b, "bravo", y)

	// Y: an invite to a second program of B's workspace, and an in-app
	// notification.
	b2 := num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/programs", token: opToken, body: map[string]any{
		"workspace_id": b.WorkspaceID, "name": "Bravo second " + pb, "domain": "bravo-second.example",
		"commission_type": "percent", "commission_rate": 10}}).data()["id"])
	yInvite := itoa(num(e.must(t, 200, req{method: "POST", path: "/api/v1/programs/" + itoa(b2) + "/invites", token: b.OwnerToken,
		body: map[string]any{"emails": []string{B.partnerEmail}}}).data()["invited"].([]any)[0].(map[string]any)["id"]))
	var yNote int64
	if err := st.db.QueryRow(`INSERT INTO notifications (outbox_id, partner_id, kind, title, body, data)
		VALUES ($1, $2, 'commission.refunded', $3, 'for Y only', '{}') RETURNING id`,
		9_000_000_000+b.PartnerID, b.PartnerID, "Y pages note "+pb).Scan(&yNote); err != nil {
		t.Fatal(err)
	}
	yIDs := map[string]string{"id": pb, "inviteId": yInvite, "notificationId": itoa(yNote)}

	// Sessions: a few per person, since every page reads the person's
	// programs (120 a minute per token) and the probes are many.
	const perRole = 3
	session := func(uid int64) string {
		tok := e.must(t, 201, req{method: "POST", path: "/api/operator/v1/users/" + itoa(uid) + "/sessions", token: opToken}).data()["token"].(string)
		secret("dashboard token", tok)
		return tok
	}
	uids := map[string]int64{"owner of A": a.OwnerID}
	for _, role := range []string{"admin", "member"} {
		uids[role+" of A"] = num(e.must(t, 201, req{method: "POST", path: "/api/operator/v1/workspaces/" + itoa(a.WorkspaceID) + "/members", token: opToken,
			body: map[string]any{"email": role + "-pages-" + pa + "@a.example", "role": role}}).data()["user_id"])
	}
	type cookie struct{ token, csrf string }
	sessions := map[string][]cookie{}
	for _, who := range []string{"owner of A", "admin of A", "member of A"} {
		for i := 0; i < perRole; i++ {
			tok := session(uids[who])
			sessions[who] = append(sessions[who], cookie{tok, pc.csrfOf(t, brandCookie, tok)})
		}
	}
	next := 0
	brandAs := func(who string) cookie { next++; return sessions[who][next%perRole] }
	xCSRF := pc.csrfOf(t, partnerCookie, x)

	// The values of B and Y that no page of A's people or of X may show.
	brandLeaks := []string{B.name, B.ref, B.hook, B.group, B.invitee, B.applicant, B.partnerEmail, b.Code}
	partnerLeaks := []string{"Y pages note " + pb, B.name, B.ref, b.Code, "Bravo second " + pb, B.partnerEmail, "bravo-paypal-" + pb}
	leaked := func(body string, leaks []string) string {
		for _, l := range leaks {
			if strings.Contains(body, l) {
				return l
			}
		}
		return ""
	}

	// The probes can fail: B's owner and Y see those values on their own
	// pages (all but the masked method, whose form is the API's).
	var bSees, ySees strings.Builder
	bOwner := cookie{b.OwnerToken, pc.csrfOf(t, brandCookie, b.OwnerToken)}
	for _, r := range routes {
		if r.method != "GET" {
			continue
		}
		switch {
		case strings.HasPrefix(r.pattern, "/app/"):
			bSees.WriteString(pc.must(t, 200, pageReq{method: "GET", path: r.fill(t, B.ids), cookies: map[string]string{brandCookie: bOwner.token}}).Body)
		case strings.HasPrefix(r.pattern, "/partner/"):
			ySees.WriteString(pc.must(t, 200, pageReq{method: "GET", path: r.fill(t, map[string]string{"id": pb}), cookies: map[string]string{partnerCookie: y}}).Body)
		}
	}
	for _, l := range brandLeaks {
		if !strings.Contains(bSees.String(), l) {
			t.Errorf("B's owner does not see %q on B's pages: the probes could not catch it", l)
		}
	}
	for _, l := range partnerLeaks[:5] {
		if !strings.Contains(ySees.String(), l) {
			t.Errorf("Y does not see %q on its pages: the probes could not catch it", l)
		}
	}

	before, yBefore := snapshot(t, st, b.ProgramID)+snapshot(t, st, b2), partnerState(t, st, b.PartnerID)
	bPrograms := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, b.WorkspaceID)
	refused := 0
	probe := func(who string, r pageRoute, path string, cookies map[string]string, form url.Values, leaks []string, want ...int) {
		t.Helper()
		pr := pageReq{method: r.method, path: path, cookies: cookies}
		if r.method == "POST" {
			pr.form = form
		}
		rep, err := pc.call(pr)
		switch {
		case err != nil:
			t.Errorf("%s: %s %s: %v", who, r.method, path, err)
			return
		case !containsInt(want, rep.Status):
			t.Errorf("%s: %s %s: %s, want one of %v", who, r.method, path, rep, want)
			return
		}
		if l := leaked(rep.Body+rep.location(), leaks); l != "" {
			t.Errorf("%s: %s %s shows %q: %s", who, r.method, path, l, rep)
		}
		if rep.Status >= 400 {
			if p := pageProblem(rep); p != "" {
				t.Errorf("%s: %s %s: %s: %s", who, r.method, path, p, rep)
			}
			if strings.Contains(rep.Body, "did not come from this site") {
				t.Errorf("%s: %s %s refused for its form token, which is the session's: %s", who, r.method, path, rep)
			}
			refused++
		}
	}

	// A's owner, admin and member on B's ids, and on B's ids through A's
	// own program.
	crossIDs := map[string]string{}
	for k, v := range B.ids {
		crossIDs[k] = v
	}
	crossIDs["id"] = pa
	for _, who := range []string{"owner of A", "admin of A", "member of A"} {
		for _, r := range routes {
			if !strings.HasPrefix(r.pattern, "/app/") {
				continue
			}
			ck := brandAs(who)
			cookies := map[string]string{brandCookie: ck.token}
			if len(r.params()) == 0 {
				// The person's own programs and a new one in their own
				// workspace: nothing of B's shows or changes.
				probe(who+" (own)", r, r.pattern, cookies, pageForm(r, nil, ck.csrf), brandLeaks, 200, 303, 400, 403)
				continue
			}
			probe(who, r, r.fill(t, B.ids), cookies, pageForm(r, B.ids, ck.csrf), brandLeaks, 403, 404)
			if len(r.params()) > 1 {
				ck = brandAs(who)
				cookies = map[string]string{brandCookie: ck.token}
				probe(who+" through A's program", r, r.fill(t, crossIDs), cookies, pageForm(r, crossIDs, ck.csrf), brandLeaks, 403, 404)
			}
		}
	}

	// X on Y's invite and notification and on B's program; X's own pages.
	xCookies := map[string]string{partnerCookie: x}
	for _, r := range routes {
		if !strings.HasPrefix(r.pattern, "/partner/") {
			continue
		}
		if len(r.params()) == 0 {
			probe("partner X (own)", r, r.pattern, xCookies, pageForm(r, nil, xCSRF), partnerLeaks, 200, 303)
			continue
		}
		probe("partner X", r, r.fill(t, yIDs), xCookies, pageForm(r, yIDs, xCSRF), partnerLeaks, 404)
	}

	// Cookies of the other kind: a brand session opens no partner page and
	// a partner session no brand page, under either cookie name.
	kind := cookie{session(a.OwnerID), ""}
	kind.csrf = pc.csrfOf(t, brandCookie, kind.token)
	// A session's form token is the same whichever area shows it.
	xAsBrand := xCSRF
	for _, r := range routes {
		var tries []pageReq
		if strings.HasPrefix(r.pattern, "/partner/") {
			path := r.fill(t, yIDs)
			tries = []pageReq{
				{path: path, cookies: map[string]string{brandCookie: kind.token}, form: pageForm(r, yIDs, kind.csrf)},
				{path: path, cookies: map[string]string{partnerCookie: kind.token}, form: pageForm(r, yIDs, kind.csrf)},
			}
		} else {
			path := r.fill(t, A.ids)
			tries = []pageReq{
				{path: path, cookies: map[string]string{partnerCookie: x}, form: pageForm(r, A.ids, xCSRF)},
				{path: path, cookies: map[string]string{brandCookie: x}, form: pageForm(r, A.ids, xAsBrand)},
			}
		}
		for _, tr := range tries {
			tr.method = r.method
			if r.method == "GET" {
				tr.form = nil
			}
			rep, err := pc.call(tr)
			if err != nil || !toLogin(rep) {
				t.Errorf("%s with cookies %v: %s %s: %v %v, want a redirect to /login", r, cookieNames(tr.cookies), r.method, tr.path, rep, err)
				continue
			}
			refused++
		}
	}

	// Forms sent with another session's token: refused, nothing changes,
	// even on the person's own program (A) and X's own rows.
	aBefore, xBefore := snapshot(t, st, a.ProgramID), partnerState(t, st, a.PartnerID)
	aPrograms := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, a.WorkspaceID)
	own := cookie{session(a.OwnerID), ""}
	other := session(a.OwnerID)
	otherCSRF := pc.csrfOf(t, brandCookie, other)
	xOther := signInPartnerAt(t, e, iss, "x-pages-"+pa, emailOf(a.PartnerID))
	xOtherCSRF := pc.csrfOf(t, partnerCookie, xOther)
	xIDs := map[string]string{"id": pa, "inviteId": A.ids["inviteId"], "notificationId": itoa(yNote)}
	for _, r := range append(routes, pageRoute{"POST", "/logout"}) {
		if r.method != "POST" {
			continue
		}
		var tr pageReq
		switch {
		case strings.HasPrefix(r.pattern, "/partner/"):
			tr = pageReq{path: r.fill(t, xIDs), cookies: map[string]string{partnerCookie: x}, form: pageForm(r, xIDs, xOtherCSRF)}
		case r.pattern == "/logout":
			tr = pageReq{path: r.pattern, cookies: map[string]string{brandCookie: own.token, partnerCookie: x}, form: url.Values{"csrf": {otherCSRF}}}
		default:
			tr = pageReq{path: r.fill(t, A.ids), cookies: map[string]string{brandCookie: own.token}, form: pageForm(r, A.ids, otherCSRF)}
		}
		tr.method = "POST"
		rep, err := pc.call(tr)
		if err != nil || rep.Status != 403 || !strings.Contains(rep.Body, "did not come from this site") {
			t.Errorf("%s with another session's form token: %v %v, want 403", r, rep, err)
			continue
		}
		if p := pageProblem(rep); p != "" {
			t.Errorf("%s with another session's form token: %s: %s", r, p, rep)
		}
		refused++
	}
	// The sessions whose forms were refused still work (sign-out was
	// refused too), and the right token is taken.
	pc.must(t, 200, pageReq{method: "GET", path: "/app/", cookies: map[string]string{brandCookie: own.token}})
	pc.must(t, 200, pageReq{method: "GET", path: "/partner/", cookies: map[string]string{partnerCookie: x}})
	if after := snapshot(t, st, a.ProgramID); after != aBefore {
		t.Errorf("A's data changed by refused forms:\nbefore:\n%s\nafter:\n%s", aBefore, after)
	}
	if after := partnerState(t, st, a.PartnerID); after != xBefore {
		t.Errorf("X's payout method, notifications or invites changed by refused forms:\nbefore: %s\nafter:  %s", xBefore, after)
	}
	if n := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, a.WorkspaceID); n != aPrograms {
		t.Errorf("A's workspace holds %d programs after refused forms, %d before", n, aPrograms)
	}

	// The sign-in page never links off-site, whatever next says, nor
	// sends a signed-in person there; a page of the dashboard in next is
	// kept (the check can fail).
	for _, next := range []string{"//evil.example", "https://evil.example", "/\\evil.example", "//evil.example/app/",
		"https:evil.example", "/app/../../evil.example", "/app/%2F%2Fevil.example"} {
		rep := pc.must(t, 200, pageReq{method: "GET", path: "/login?next=" + url.QueryEscape(next)})
		if link := offSite(signInLink(rep.Body)); link != "" {
			t.Errorf("/login?next=%s: the sign-in link leads off-site, to %s", next, link)
		}
		rep, err := pc.call(pageReq{method: "GET", path: "/login?next=" + url.QueryEscape(next), cookies: map[string]string{brandCookie: own.token}})
		if err != nil || rep.Status >= 500 {
			t.Errorf("/login?next=%s signed in: %v %v", next, rep, err)
		} else if link := offSite(rep.location()); link != "" {
			t.Errorf("/login?next=%s signed in: redirected off-site, to %s", next, link)
		} else if link := offSite(signInLink(rep.Body)); link != "" {
			t.Errorf("/login?next=%s signed in: the sign-in link leads off-site, to %s", next, link)
		}
	}
	if rep := pc.must(t, 200, pageReq{method: "GET", path: "/login?next=" + url.QueryEscape("/app/programs/"+pa)}); signInLink(rep.Body) != "/auth/login?next=%2Fapp%2Fprograms%2F"+pa {
		t.Errorf("/login?next=/app/programs/%s does not keep the page: %s", pa, signInLink(rep.Body))
	}

	if after := snapshot(t, st, b.ProgramID) + snapshot(t, st, b2); after != before {
		t.Errorf("B's data changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := partnerState(t, st, b.PartnerID); after != yBefore {
		t.Errorf("Y's payout method, notifications or invites changed:\nbefore: %s\nafter:  %s", yBefore, after)
	}
	if n := st.count(t, `SELECT count(*) FROM programs WHERE workspace_id = $1`, b.WorkspaceID); n != bPrograms {
		t.Errorf("B's workspace holds %d programs, %d before", n, bPrograms)
	}
	sc.note("%d page and form requests of A's owner, admin and member on B, of partner X on Y and B, with cookies of the other kind or another session's form token refused with an HTML page or a redirect to sign-in; %d routes; B's and Y's rows unchanged", refused, len(routes))
}

var signInHref = regexp.MustCompile(`<a class="button" href="([^"]*)">Sign in</a>`)

// signInLink is where the sign-in page's "Sign in" link leads, after the
// sign-in at /auth/login ("" when the page has none).
func signInLink(body string) string {
	m := signInHref.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// offSite returns link when it, or the next page it names (where the
// sign-in returns to), leads away from the dashboard's own origin ("" when
// both stay on it), as a browser resolves them.
func offSite(link string) string {
	base, _ := url.Parse("http://track.test/login")
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	to := base.ResolveReference(u)
	if to.Host != base.Host || to.Scheme != base.Scheme {
		return link
	}
	if next := to.Query().Get("next"); next != "" {
		n, err := url.Parse(next)
		if err != nil || strings.Contains(next, "\\") {
			return link
		}
		if back := base.ResolveReference(n); back.Host != base.Host || back.Scheme != base.Scheme {
			return link
		}
	}
	return ""
}

func cookieNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
