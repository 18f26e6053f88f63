package ingest

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

func partnersPath(programID int64, query string) string {
	p := "/api/v1/programs/" + itoa(programID) + "/partners"
	if query != "" {
		p += "?" + query
	}
	return p
}

// partnerIDs are the ids of a listing's rows, in order.
func partnerIDs(t *testing.T, r response) []int64 {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	out := []int64{}
	for _, row := range r.Body["data"].([]any) {
		out = append(out, id(row.(map[string]any)["id"]))
	}
	return out
}

func TestListProgramPartners(t *testing.T) {
	b := setup(t)
	app := b.app
	w := MustWorld(t, app)
	// Pat: a sale of 100.00 (30% pending) and one of 20.00 refunded in part.
	mustSale(t, b, w, "txn-1", 10000)
	mustSale(t, b, w, "txn-2", 2000)
	r := do(t, app, req{"POST", "/api/v1/track/refund", map[string]any{"transaction_id": "txn-2", "refund_amount_cents": 500}, bearer(w.liveKey)})
	if r.Status != 200 {
		t.Fatalf("refund: %d %s", r.Status, r.Raw)
	}
	b.clock.Set(b.clock.Now().Add(time.Second))
	d := mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners",
		map[string]any{"email": "zoe@other.example", "name": "Zoé"}, operator()}), 201)
	zoe := id(d["id"])

	t.Run("OK counts and money", func(t *testing.T) {
		r := do(t, app, req{"GET", partnersPath(w.programID, ""), nil, bearer(w.ownerToken)})
		if got := partnerIDs(t, r); len(got) != 2 || got[0] != zoe || got[1] != w.partnerID {
			t.Fatalf("ids = %v", got)
		}
		if r.Header.Get("X-RateLimit-Limit") != "120" || r.Header.Get("X-Request-ID") == "" {
			t.Fatalf("headers = %v", r.Header)
		}
		var body struct {
			Data []json.RawMessage
			Meta struct{ Pagination map[string]int }
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		if p := body.Meta.Pagination; p["page"] != 1 || p["pageSize"] != 10 || p["pageCount"] != 1 || p["total"] != 2 {
			t.Fatalf("pagination = %v", p)
		}
		var pat map[string]json.RawMessage
		if err := json.Unmarshal(body.Data[1], &pat); err != nil {
			t.Fatal(err)
		}
		// Money as exact JSON numbers in major units: 100 + 20 - 5 revenue;
		// the refunded sale's commission is reversed and not counted.
		want := map[string]string{
			"name": `"Pat"`, "status": `"active"`, "currency": `"USD"`, "clicks": "2", "leads": "0", "conversions": "2",
			"revenue": "115", "revenue_by_currency": `{"USD":115}`,
			"commissions": `{"approved":0,"paid":0,"pending":30}`, "commissions_by_currency": `{"USD":{"approved":0,"paid":0,"pending":30}}`,
			"balance": "0",
		}
		for k, v := range want {
			if string(pat[k]) != v {
				t.Errorf("%s = %s, want %s", k, pat[k], v)
			}
		}
	})

	t.Run("OK member reads one partner with links", func(t *testing.T) {
		tok := dashboardMemberToken(t, b, w, "member")
		r := do(t, app, req{"GET", partnersPath(w.programID, "") + "/" + itoa(w.partnerID), nil, bearer(tok)})
		d := mustOK(t, r, 200)
		links := d["links"].([]any)
		if id(d["id"]) != w.partnerID || d["conversions"] != float64(2) || len(links) != 1 {
			t.Fatalf("partner = %v", d)
		}
		l := links[0].(map[string]any)
		if id(l["id"]) != w.linkID || l["code"] != "pat"+itoa(w.programID) || l["active"] != true {
			t.Fatalf("link = %v", l)
		}
	})

	t.Run("OK filters and paging", func(t *testing.T) {
		for _, tc := range []struct {
			desc, query string
			want        []int64
		}{
			{"q name any case", "q=ZO%C3%89", []int64{zoe}},
			{"q email", "q=%40partner.example", []int64{w.partnerID}},
			{"q percent is literal", "q=%25", []int64{}},
			{"q with SQL is text", "q=" + url.QueryEscape("'; DROP TABLE partners; --"), []int64{}},
			{"q backslash", "q=%5C", []int64{}},
			{"status active", "status=active", []int64{zoe, w.partnerID}},
			{"status removed", "status=removed", []int64{}},
			{"page 2 of 1-row pages", "pageSize=1&page=2", []int64{w.partnerID}},
			{"page past the end", "page=5", []int64{}},
			{"empty values are absent", "page=&pageSize=&status=&q=&format=", []int64{zoe, w.partnerID}},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				r := do(t, app, req{"GET", partnersPath(w.programID, tc.query), nil, bearer(w.ownerToken)})
				got := partnerIDs(t, r)
				if len(got) != len(tc.want) {
					t.Fatalf("ids = %v, want %v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("ids = %v, want %v", got, tc.want)
					}
				}
			})
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			query, msg string
		}{
			{"page=0", ledger.MsgEventPage},
			{"page=x", ledger.MsgEventPage},
			{"pageSize=101", ledger.MsgEventPageSize},
			{"status=paused", ledger.MsgPartnerStatus},
			{"q=" + strings.Repeat("a", 101), ledger.MsgPartnerSearch},
			{"q=" + strings.Repeat("x", 4000), ledger.MsgPartnerSearch},
			{"pageSize=99999999999999999999", ledger.MsgEventPageSize},
			{"format=xml", ledger.MsgPartnerFormat},
			{"format=csv&status=x", ledger.MsgPartnerStatus},
		} {
			r := do(t, app, req{"GET", partnersPath(w.programID, tc.query), nil, bearer(w.ownerToken)})
			assertPlatformError(t, r, 400, "BadRequestError", tc.msg, "")
		}
	})

	t.Run("ErrNotFound partner", func(t *testing.T) {
		other := MustWorld(t, app)
		for _, p := range []string{itoa(other.partnerID), "0", "x"} {
			r := do(t, app, req{"GET", partnersPath(w.programID, "") + "/" + p, nil, bearer(w.ownerToken)})
			assertPlatformError(t, r, 404, "NotFoundError", "partner not found", "")
		}
	})

	t.Run("ErrOtherWorkspace", func(t *testing.T) {
		other := MustWorld(t, app)
		for _, path := range []string{partnersPath(w.programID, ""), partnersPath(w.programID, "format=csv"),
			partnersPath(w.programID, "") + "/" + itoa(w.partnerID)} {
			r := do(t, app, req{"GET", path, nil, bearer(other.ownerToken)})
			assertPlatformError(t, r, 403, "ForbiddenError", "you are not a member of this program's workspace", "")
		}
		r := do(t, app, req{"GET", partnersPath(99999999, ""), nil, bearer(w.ownerToken)})
		assertPlatformError(t, r, 404, "NotFoundError", "program not found", "")
		r = do(t, app, req{"GET", partnersPath(w.programID, ""), nil, bearer(w.liveKey)})
		assertPlatformError(t, r, 401, "UnauthorizedError", "invalid or expired token", "")
	})
}

// TestExportProgramPartnersCSV exports more partners than two batches
// hold, with names a spreadsheet would read as formulas.
func TestExportProgramPartnersCSV(t *testing.T) {
	b := setup(t)
	app := b.app
	w := MustWorld(t, app)
	mustSale(t, b, w, "txn-1", 10000)
	const bulk = 2*ledger.PartnerExportBatch + 3
	if _, err := b.db.Exec(`
		WITH p AS (
			INSERT INTO partners (email, name)
			SELECT 'bulk' || i || '@partner.example', 'Bulk ' || i FROM generate_series(1, $2::int) i
			RETURNING id
		)
		INSERT INTO enrollments (program_id, partner_id, created_at)
		SELECT $1, id, timestamptz '2020-01-01' FROM p`, w.programID, bulk); err != nil {
		t.Fatal(err)
	}
	tricky := []string{`=HYPERLINK("http://evil.example","x")`, "+1+1", "-2+3", "@SUM(A1)", `Lee, "Ann"`}
	for i, name := range tricky {
		mustOK(t, do(t, app, req{"POST", "/api/operator/v1/programs/" + itoa(w.programID) + "/partners",
			map[string]any{"email": "tricky" + itoa(int64(i)) + "@partner.example", "name": name}, operator()}), 201)
	}

	r := do(t, app, req{"GET", partnersPath(w.programID, "format=csv&pageSize=1"), nil, bearer(dashboardMemberToken(t, b, w, "member"))})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); cd != "attachment; filename=partners-"+itoa(w.programID)+".csv" {
		t.Fatalf("Content-Disposition = %q", cd)
	}
	if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-RateLimit-Limit") != "120" {
		t.Fatalf("headers = %v", r.Header)
	}
	records, err := csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(records[0], ",") != strings.Join(partnerCSVHeader, ",") {
		t.Fatalf("header = %v", records[0])
	}
	rows := records[1:]
	if len(rows) != bulk+len(tricky)+1 {
		t.Fatalf("%d rows, want %d", len(rows), bulk+len(tricky)+1)
	}
	seen := map[string]bool{}
	byName := map[string][]string{}
	for _, row := range rows {
		if seen[row[0]] {
			t.Fatalf("partner %s twice", row[0])
		}
		seen[row[0]] = true
		byName[row[1]] = row
	}
	for _, name := range tricky[:4] {
		if byName["'"+name] == nil {
			t.Errorf("formula name %q not quoted: %v", name, byName)
		}
	}
	if byName[`Lee, "Ann"`] == nil {
		t.Errorf("plain name with a comma and quotes changed")
	}
	pat := byName["Pat"]
	if pat == nil || pat[8] != "1" || pat[9] != "100" || pat[11] != "30" || pat[10] != `{"USD":100}` || pat[15] != "0" {
		t.Fatalf("Pat = %v", pat)
	}

	// Filters apply to the export as to the list.
	r = do(t, app, req{"GET", partnersPath(w.programID, "format=csv&q="+url.QueryEscape("bulk 10")), nil, bearer(w.ownerToken)})
	records, err = csv.NewReader(strings.NewReader(string(r.Raw))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// "Bulk 10", "Bulk 100".."Bulk 109", "Bulk 1000".."Bulk 1003": 15.
	if len(records) != 1+15 {
		t.Fatalf("filtered export: %d records", len(records))
	}
}

// TestProgramPartnersRateLimit: the list, its export and the one-partner
// read share 120 a minute per dashboard token; another token counts apart.
func TestProgramPartnersRateLimit(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	start := b.clock.Now().Truncate(time.Minute).Add(time.Second)
	b.clock.Set(start)
	paths := []string{partnersPath(w.programID, ""), partnersPath(w.programID, "format=csv"),
		partnersPath(w.programID, "") + "/" + itoa(w.partnerID)}
	for i := 1; i <= limitPartners; i++ {
		r := do(t, b.app, req{"GET", paths[i%len(paths)], nil, bearer(w.ownerToken)})
		if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(limitPartners-i) {
			t.Fatalf("GET %d: %d %v", i, r.Status, r.Header)
		}
	}
	for _, path := range paths {
		r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
		if r.Status != 429 || r.Body["error"].(map[string]any)["code"] != "rate_limited" {
			t.Fatalf("GET %s over the limit: %d %s", path, r.Status, r.Raw)
		}
	}
	tok := dashboardMemberToken(t, b, w, "member")
	if r := do(t, b.app, req{"GET", paths[0], nil, bearer(tok)}); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(limitPartners-1) {
		t.Fatalf("another token: %d %v", r.Status, r.Header)
	}
	b.clock.Set(start.Add(time.Minute))
	if r := do(t, b.app, req{"GET", paths[0], nil, bearer(w.ownerToken)}); r.Status != 200 {
		t.Fatalf("next minute: %d", r.Status)
	}
}

func TestCSVText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Ann", "Ann"},
		{"", ""},
		{"=1+1", "'=1+1"},
		{"+33 6", "'+33 6"},
		{"-x", "'-x"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"a=b", "a=b"},
		{"'quoted", "'quoted"},
	} {
		if got := csvText(tc.in); got != tc.want {
			t.Errorf("csvText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// failingBatches is the partner service whose export batches fail.
type failingBatches struct{ ledger.ProgramPartnerService }

func (failingBatches) ProgramPartnerBatch(context.Context, ledger.ProgramPartnerQuery, *ledger.ProgramPartner) ([]ledger.ProgramPartner, error) {
	return nil, errors.New("connection refused")
}

// TestExportProgramPartnersFirstBatchFails: the first batch is read before
// the answer starts, so its failure is a 500 in the platform envelope,
// not an empty CSV.
func TestExportProgramPartnersFirstBatchFails(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	app := newTestServer(b.db, b.clock, func(svc *Services, _ *Options) {
		svc.ProgramPartners = failingBatches{svc.ProgramPartners}
	}).App()
	r := do(t, app, req{"GET", partnersPath(w.programID, "format=csv"), nil, bearer(w.ownerToken)})
	assertPlatformError(t, r, 500, "InternalServerError", "Internal server error", "")
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") || r.Header.Get("Content-Disposition") != "" {
		t.Fatalf("headers = %v", r.Header)
	}
}
