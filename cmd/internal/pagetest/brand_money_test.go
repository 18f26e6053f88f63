package pagetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// Helpers of the commission, payout, event and settings page tests: a
// partner with a link, sales through the API, members of the brand.

// seller is a partner of a brand's program, with a link, and the
// program's live key to record its sales.
type seller struct {
	PartnerID, LinkID int64
	Email, Name, Key  string
}

func (s *stack) seller(t *testing.T, w brandWorld, name string) seller {
	t.Helper()
	email := fmt.Sprintf("%s%d@creator.example", name, w.ProgramID)
	p := s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/programs/%d/partners", w.ProgramID), opToken, map[string]any{"email": email, "name": name})
	partnerID := jsonInt(p["id"])
	l := s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/programs/%d/links", w.ProgramID), opToken,
		map[string]any{"partner_id": partnerID, "code": fmt.Sprintf("%s%d", name, w.ProgramID)})
	return seller{PartnerID: partnerID, LinkID: jsonInt(l["id"]), Email: email, Name: name, Key: s.liveKey(t, w)}
}

// liveKeys holds the live key made for each program (by stack and
// program): making another would end the one sellers already hold.
var liveKeys sync.Map

func (s *stack) liveKey(t *testing.T, w brandWorld) string {
	t.Helper()
	id := fmt.Sprintf("%s/%d", s.URL, w.ProgramID)
	if k, ok := liveKeys.Load(id); ok {
		return k.(string)
	}
	k := s.api(t, 200, "POST", fmt.Sprintf("/api/v1/programs/%d/api-key", w.ProgramID), w.Owner, nil)["api_key"].(string)
	liveKeys.Store(id, k)
	return k
}

// click writes a click of the seller's link at time at, straight into the
// clicks table (as the click workers would), and returns its id.
func (s *stack) click(t *testing.T, w brandWorld, sl seller, at time.Time) string {
	t.Helper()
	id := ledger.NewClickID(at)
	occurred, _ := ledger.ClickTime(id)
	if _, err := s.DB.Exec(`INSERT INTO clicks (click_id, occurred_at, program_id, partner_id, link_id, page_url) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, occurred, w.ProgramID, sl.PartnerID, sl.LinkID, "https://"+w.Domain+"/landing"); err != nil {
		t.Fatal(err)
	}
	return id
}

// sale records a sale of cents through the sale API, attributed to a new
// click of the seller, and returns its commission id.
func (s *stack) sale(t *testing.T, w brandWorld, sl seller, txn string, cents int64) int64 {
	t.Helper()
	body := s.apiBody(t, 200, "POST", "/api/v1/track/sale", sl.Key, map[string]any{
		"transaction_id": txn, "amount_cents": cents, "click_id": s.click(t, w, sl, time.Now())})
	id := jsonInt(body["commission_id"])
	if id == 0 {
		t.Fatalf("sale %s: no commission: %v", txn, body)
	}
	return id
}

// member adds a user with role to the brand's workspace and returns their
// dashboard token.
func (s *stack) member(t *testing.T, w brandWorld, role string) string {
	t.Helper()
	ws := s.api(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/settings", w.ProgramID), w.Owner, nil)["workspace_id"]
	u := s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/workspaces/%d/members", jsonInt(ws)), opToken,
		map[string]any{"email": fmt.Sprintf("%s%d@brand.example", role, w.ProgramID), "role": role})
	return s.api(t, 201, "POST", fmt.Sprintf("/api/operator/v1/users/%d/sessions", jsonInt(u["user_id"])), opToken, nil)["token"].(string)
}

// commissionStatus reads a commission's status through the review API.
func (s *stack) commissionStatus(t *testing.T, w brandWorld, id int64) string {
	t.Helper()
	body := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/commissions?pageSize=100", w.ProgramID), w.Owner, nil)
	for _, c := range body["data"].([]any) {
		if m := c.(map[string]any); jsonInt(m["id"]) == id {
			return m["status"].(string)
		}
	}
	t.Fatalf("commission %d not listed", id)
	return ""
}

// mustBeRefused checks a page or form of another brand's program: the
// API's refusal (403 for a program of another workspace, 404 for one that
// does not exist), shown as an error page that leaks none of leak.
func (p page) mustBeRefused(t *testing.T, leak ...string) {
	t.Helper()
	if p.Status != 403 && p.Status != 404 {
		t.Fatalf("another brand's program: status %d, want 403 or 404", p.Status)
	}
	if !strings.Contains(p.Body, `<p class="form-error" role="alert">`) {
		t.Fatalf("another brand's program: no error page:\n%s", p.Body)
	}
	for _, s := range leak {
		if strings.Contains(p.Body, s) {
			t.Fatalf("another brand's page shows %q", s)
		}
	}
}
