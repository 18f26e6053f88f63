package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestPartnerReadsNotifications: the partner's notifications show newest
// first, unread said in words; "Mark read" and "Mark all read" change the
// page; another partner neither sees them nor can mark them.
func TestPartnerReadsNotifications(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ana, anaID := s.partnerSession(t, "ana@creator.example")
	bo, boID := s.partnerSession(t, "bo@creator.example")
	// The rows the notifications worker writes from the outbox (the stack
	// runs no worker).
	note := func(partnerID, outboxID int64, title, body string) int64 {
		t.Helper()
		var id int64
		if err := s.DB.QueryRow(`INSERT INTO notifications (outbox_id, partner_id, kind, title, body, data)
			VALUES ($1, $2, 'commission.refunded', $3, $4, '{}') RETURNING id`, outboxID, partnerID, title, body).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := note(anaID, 1, "Commission refunded", "A sale of Brand 1 was refunded: 20.00 USD taken back.")
	note(anaID, 2, "Payout paid", "Your payout of 40.00 USD was paid.")
	boNote := note(boID, 3, "Bo's news", "For Bo only.")

	b := s.browser(t).withCookie("pt_partner_session", ana)
	p := b.get("/partner/notifications")
	if p.Status != 200 {
		t.Fatalf("notifications: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "<h1>Notifications</h1>", `aria-current="page">Notifications`, `<span data-count="2">2</span> unread notifications.`,
		`<span class="status ok">Unread</span> Payout paid`, `<span class="status ok">Unread</span> Commission refunded`,
		"Your payout of 40.00 USD was paid.", "Mark “Payout paid” read", "Mark all read")
	if strings.Index(p.Body, "Payout paid") > strings.Index(p.Body, "Commission refunded") {
		t.Fatal("not newest first")
	}
	if strings.Contains(p.Body, "Bo&#39;s news") {
		t.Fatal("ana sees bo's notification")
	}
	csrf := p.csrf(t)

	// Without the form token nothing changes.
	if p := b.post(fmt.Sprintf("/partner/notifications/%d/read", first), url.Values{}); p.Status != 403 {
		t.Fatalf("no csrf: %d", p.Status)
	}
	// Another partner cannot mark ana's: the API's 404 page; it stays unread.
	other := s.browser(t).withCookie("pt_partner_session", bo)
	op := other.get("/partner/notifications")
	op.mustContain(t, "Bo&#39;s news", "1 unread notification.")
	if strings.Contains(op.Body, "Payout paid") {
		t.Fatal("bo sees ana's notification")
	}
	if p := other.post(fmt.Sprintf("/partner/notifications/%d/read", first), url.Values{"csrf": {op.csrf(t)}}); p.Status != 404 {
		t.Fatalf("bo marks ana's: %d %s", p.Status, p.Body)
	}
	b.get("/partner/notifications").mustContain(t, `2</span> unread notifications.`)

	// Mark one read.
	p = b.post(fmt.Sprintf("/partner/notifications/%d/read", first), url.Values{"csrf": {csrf}})
	if p.Status != 303 || p.Location != "/partner/notifications" {
		t.Fatalf("mark read: %d %q %s", p.Status, p.Location, p.Body)
	}
	p = b.get("/partner/notifications")
	p.mustContain(t, "Marked read: Commission refunded.", "1 unread notification.",
		`<span class="status">Read</span> Commission refunded`, `<span class="status ok">Unread</span> Payout paid`)
	if strings.Contains(p.Body, "Mark “Commission refunded” read") {
		t.Fatal("a read notification still has its Mark read form")
	}

	// Mark all read: ana's only.
	if p := b.post("/partner/notifications/read-all", url.Values{"csrf": {csrf}}); p.Status != 303 {
		t.Fatalf("read all: %d %s", p.Status, p.Body)
	}
	p = b.get("/partner/notifications")
	p.mustContain(t, "1 notification marked read.", "All read.", `<span class="status">Read</span> Payout paid`)
	if strings.Contains(p.Body, "Mark all read") || strings.Contains(p.Body, "Unread") {
		t.Fatalf("unread left after mark all read:\n%s", p.Body)
	}
	other.get("/partner/notifications").mustContain(t, `<span class="status ok">Unread</span> Bo&#39;s news`)
	// Nor can ana mark bo's.
	if p := b.post(fmt.Sprintf("/partner/notifications/%d/read", boNote), url.Values{"csrf": {csrf}}); p.Status != 404 {
		t.Fatalf("ana marks bo's: %d %s", p.Status, p.Body)
	}

	// A partner without notifications is told so.
	s.browser(t).withCookie("pt_partner_session", s.partnerToken(t, "cy@creator.example")).
		get("/partner/notifications").mustContain(t, "No notification yet.")
}
