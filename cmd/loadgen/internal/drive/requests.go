package drive

// The request functions the runner drives, made from a provisioned world:
// clicks (spread over many client addresses through X-Forwarded-For),
// server-mode leads, sales, refunds of the sales made, signed Stripe
// checkout events and the dashboard listing.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// ClientIPs is how many distinct client addresses clicks and leads come
// from: enough that the per-IP limits (60 clicks a minute) stay out of
// the way of a 60 s run at up to 100 k/s (the bench's sustained clicks
// run at half the fiber+enqueue ceiling, about 12 k/s on the fastest
// machine measured), as many real visitors would.
const ClientIPs = 1 << 17

// IP is client address n (in 10.0.0.0/8).
func IP(n int64) string {
	n %= 1 << 24
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

// ClickBody is a click as the browser tracker sends it, about 330 bytes,
// every one of the same visitor session.
func ClickBody(code string) []byte {
	return clickBody(code, "sess_k2j3h4g5f6_1732180000000")
}

func clickBody(code, session string) []byte {
	u := "https://shop.example.com/landing?aff=" + code + "&utm_source=newsletter"
	return []byte(`{"affiliate_url":"` + u + `","page_url":"` + u +
		`","referrer_url":"https://news.example.org/","session_id":"` + session +
		`","screen_resolution":"1920x1080","language":"en-US","timezone":"Europe/Berlin"}`)
}

// Clicks posts clicks on the programs' links, program i%len and client
// address ipBase+i.
func Clicks(c *Client, programs []Program, ipBase int64) Do {
	bodies := make([][]byte, len(programs))
	for i, p := range programs {
		bodies[i] = ClickBody(p.Code)
	}
	return func(ctx context.Context, w int, i int64) (int, error) {
		return c.Do(&Request{Method: "POST", Path: "/api/v1/track/click",
			Header: [][2]string{{"X-Forwarded-For", IP(ipBase + i%ClientIPs)}},
			Body:   bodies[i%int64(len(bodies))]}, nil)
	}
}

// ClicksNewSessions posts clicks on a program's link like Clicks, each
// of a visitor session of its own ("sess_<tag>_<i>"): the worst case for
// the rollups' unique visitors, which keep every session of a day once.
func ClicksNewSessions(c *Client, p Program, ipBase int64, tag string) Do {
	return func(ctx context.Context, w int, i int64) (int, error) {
		return c.Do(&Request{Method: "POST", Path: "/api/v1/track/click",
			Header: [][2]string{{"X-Forwarded-For", IP(ipBase + i%ClientIPs)}},
			Body:   clickBody(p.Code, "sess_"+tag+"_"+strconv.FormatInt(i, 10))}, nil)
	}
}

// ClickIDs records clicks on a program's link and keeps the ids of the
// accepted ones, for leads (a lead needs a click of its own: a customer
// past the lead stage refuses another).
type ClickIDs struct {
	c    *Client
	body []byte
	ids  [][]string // per worker
}

// NewClickIDs returns a recorder of clicks on program p.
func NewClickIDs(c *Client, p Program, workers int) *ClickIDs {
	return &ClickIDs{c: c, body: ClickBody(p.Code), ids: make([][]string, workers)}
}

// Do is the load function.
func (k *ClickIDs) Do(ctx context.Context, w int, i int64) (int, error) {
	var out []byte
	status, err := k.c.Do(&Request{Method: "POST", Path: "/api/v1/track/click",
		Header: [][2]string{{"X-Forwarded-For", IP(3<<20 + i%ClientIPs)}}, Body: k.body}, &out)
	if status == 200 {
		var r struct {
			ClickID string `json:"click_id"`
		}
		if json.Unmarshal(out, &r) == nil && r.ClickID != "" {
			k.ids[w] = append(k.ids[w], r.ClickID)
		}
	}
	return status, err
}

// IDs are the accepted clicks' ids.
func (k *ClickIDs) IDs() []string {
	var all []string
	for _, ids := range k.ids {
		all = append(all, ids...)
	}
	return all
}

// Leads posts server-mode leads with program p's key, lead i on click i
// with a customer key of its own; the run ends when the clicks run out.
func Leads(c *Client, p Program, clicks []string, tag string) Do {
	return func(ctx context.Context, w int, i int64) (int, error) {
		if i >= int64(len(clicks)) {
			return 0, ErrStop
		}
		n := strconv.FormatInt(i, 10)
		body := `{"click_id":"` + clicks[i] + `","customer_key":"` + tag + "-cust-" + n + `","email":"c` + n + `@buyer.example"}`
		return c.Do(&Request{Method: "POST", Path: "/api/v1/track/lead", Token: p.Key,
			Header: [][2]string{{"X-Forwarded-For", IP(i % ClientIPs)}}, Body: []byte(body)}, nil)
	}
}

// Sales posts sales attributed to the programs' seed clicks (sale i with
// program i%len's key) and remembers which succeeded, for Refunds.
type Sales struct {
	c        *Client
	programs []Program
	prefix   string
	made     [][]int64 // per worker
}

// NewSales returns the sales of one phase; prefix makes transaction ids
// unique (it must differ between phases and runs).
func NewSales(c *Client, programs []Program, prefix string, workers int) *Sales {
	return &Sales{c: c, programs: programs, prefix: prefix, made: make([][]int64, workers)}
}

// Do is the load function.
func (s *Sales) Do(ctx context.Context, w int, i int64) (int, error) {
	p := s.programs[i%int64(len(s.programs))]
	click := p.Clicks[int(i/int64(len(s.programs)))%len(p.Clicks)]
	body := `{"transaction_id":"` + s.txn(i) + `","amount_cents":4999,"currency":"USD","click_id":"` + click + `"}`
	status, err := s.c.Do(&Request{Method: "POST", Path: "/api/v1/track/sale", Token: p.Key, Body: []byte(body)}, nil)
	if status >= 200 && status < 300 {
		s.made[w] = append(s.made[w], i)
	}
	return status, err
}

func (s *Sales) txn(i int64) string { return s.prefix + "-" + strconv.FormatInt(i, 10) }

// Made is every sale that succeeded.
func (s *Sales) Made() []int64 {
	var all []int64
	for _, m := range s.made {
		all = append(all, m...)
	}
	return all
}

// Refunds refunds the sales made, in full, one request each; the run ends
// when every sale was refunded.
func (s *Sales) Refunds() Do {
	made := s.Made()
	return func(ctx context.Context, w int, i int64) (int, error) {
		if i >= int64(len(made)) {
			return 0, ErrStop
		}
		sale := made[i]
		p := s.programs[sale%int64(len(s.programs))]
		body := `{"transaction_id":"` + s.txn(sale) + `","reason":"refund","refund_reason":"load test"}`
		return s.c.Do(&Request{Method: "POST", Path: "/api/v1/track/refund", Token: p.Key, Body: []byte(body)}, nil)
	}
}

// Stripe posts checkout.session.completed events of the programs'
// processor accounts, attributed to their seed clicks and signed with
// the webhook secret as Stripe signs them.
func Stripe(c *Client, programs []Program, secret string) Do {
	return func(ctx context.Context, w int, i int64) (int, error) {
		p := programs[i%int64(len(programs))]
		ev := stripetest.CheckoutCompleted(p.Account).
			Set("metadata.svc_click_id", p.Clicks[int(i/int64(len(programs)))%len(p.Clicks)])
		payload := ev.Payload()
		return c.Do(&Request{Method: "POST", Path: "/api/v1/webhooks/stripe",
			Header: [][2]string{{"Stripe-Signature", stripetest.Sign(payload, secret, time.Now())}}, Body: payload}, nil)
	}
}

// ListingQuery is one query of the dashboard's tracking-event listing.
type ListingQuery struct {
	Name string
	Path string
}

// ListingQueries are the queries a dashboard makes of a program's
// listing: the first page of everything, clicks only, a later page, and
// clicks of one day three days back.
func ListingQueries(programID int64, now time.Time) []ListingQuery {
	base := "/api/tracking/events/" + strconv.FormatInt(programID, 10)
	day := now.UTC().AddDate(0, 0, -3).Format("2006-01-02")
	return []ListingQuery{
		{"first page", base},
		{"clicks, 100 a page", base + "?eventType=click&pageSize=100"},
		{"page 3 of 25", base + "?page=3&pageSize=25"},
		{"clicks of one day", base + "?eventType=click&dateFrom=" + day + "&dateTo=" + day + "&pageSize=50"},
	}
}

// PerformanceQueries are the performance endpoint's queries issue 25
// sets a target for: 90 days, all, and the top partners over 90 days.
func PerformanceQueries(programID int64) []ListingQuery {
	base := "/api/tracking/performance/" + strconv.FormatInt(programID, 10)
	return []ListingQuery{
		{"90d", base + "?period=90d"},
		{"all", base + "?period=all"},
		{"groupBy=partner", base + "?period=90d&groupBy=partner"},
	}
}

// Listing reads one listing query with a dashboard token.
func Listing(c *Client, q ListingQuery, token string) Do {
	return func(ctx context.Context, w int, i int64) (int, error) {
		return c.Do(&Request{Method: "GET", Path: q.Path, Token: token}, nil)
	}
}

// PageQueries are the dashboard pages issue 27 sets a target for: a
// program's overview (its default 30 days) and its partners.
func PageQueries(programID int64) []ListingQuery {
	base := "/app/programs/" + strconv.FormatInt(programID, 10)
	return []ListingQuery{
		{"overview", base},
		{"partners", base + "/partners"},
	}
}

// Page reads one dashboard page as a signed-in browser does (the session
// cookie), taking the sessions in turn.
func Page(c *Client, q ListingQuery, sessions []string) Do {
	return func(ctx context.Context, w int, i int64) (int, error) {
		cookie := "pt_session=" + sessions[i%int64(len(sessions))]
		return c.Do(&Request{Method: "GET", Path: q.Path, Header: [][2]string{{"Cookie", cookie}}}, nil)
	}
}
