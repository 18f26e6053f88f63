package pagetest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
)

// TestBrandGroupsAndPartnerChanges: the partners page lists the partner
// with its numbers; its forms create and edit groups, move the partner
// and suspend and reactivate it; a refused form shows the API's message
// next to its field with a 4xx and changes nothing.
func TestBrandGroupsAndPartnerChanges(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	ana := s.enroll(t, w, "Ana Creator", "ana@creator.example")
	b := s.browser(t).withCookie("pt_session", w.Owner)
	base := fmt.Sprintf("/app/programs/%d", w.ProgramID)
	groupsAPI := fmt.Sprintf("/api/v1/programs/%d/groups", w.ProgramID)

	p := b.get(base + "/partners")
	if p.Status != 200 {
		t.Fatalf("partners: %d %s", p.Status, p.Body)
	}
	p.mustContain(t, "<h1>Partners</h1>", "Ana Creator", "ana@creator.example", `<span class="status ok">active</span>`,
		`<option value="`, ">Default</option>", "Suspend Ana Creator", "Move Ana Creator", "0.00 USD")

	// A rate that is not a number: the API's message next to the field.
	bad := b.submit(p, base+"/groups", url.Values{"name": {"VIP"}, "commission_type": {"percent"}, "commission_rate": {"abc"}})
	if bad.Status != 400 {
		t.Fatalf("bad group: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `<p class="field-error" id="group-rate-err">`+ledger.MsgCommissionRate+`</p>`,
		`id="group-rate" name="commission_rate" value="abc" aria-invalid="true" aria-describedby="group-rate-err"`,
		`id="group-name" name="name" value="VIP"`)
	if n := len(s.brandList(t, w, groupsAPI)); n != 1 {
		t.Fatalf("%d groups after a refused form", n)
	}

	// A good one is created and shown.
	ok := b.submit(p, base+"/groups", url.Values{"name": {"VIP"}, "commission_type": {"percent"}, "commission_rate": {"30"}, "hold_days": {"14"}})
	if ok.Status != 303 || ok.Location != base+"/partners" {
		t.Fatalf("create group: %d %q %s", ok.Status, ok.Location, ok.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, `<p class="flash" role="status">Group VIP created.</p>`, "Save group VIP")
	var vip int64
	for _, g := range s.brandList(t, w, groupsAPI) {
		if g["name"] == "VIP" {
			vip = jsonInt(g["id"])
			if g["commission_rate"] != float64(30) || g["hold_days"] != float64(14) {
				t.Fatalf("VIP group: %v", g)
			}
		}
	}
	if vip == 0 {
		t.Fatal("no VIP group")
	}
	p.mustContain(t, fmt.Sprintf(`id="g%d-rate" name="commission_rate" value="30"`, vip))

	// Editing with a hold beyond a year is refused next to that field.
	edit := fmt.Sprintf("%s/groups/%d", base, vip)
	form := url.Values{"name": {"VIP"}, "commission_type": {"percent"}, "commission_rate": {"35"}, "duration_months": {"0"}, "hold_days": {"400"}}
	bad = b.submit(p, edit, form)
	if bad.Status != 400 {
		t.Fatalf("bad edit: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, fmt.Sprintf(`<p class="field-error" id="g%d-hold-err">%s</p>`, vip, ledger.MsgHoldDays),
		fmt.Sprintf(`id="g%d-hold" name="hold_days" value="400" aria-invalid="true"`, vip))
	form.Set("hold_days", "7")
	if r := b.submit(p, edit, form); r.Status != 303 {
		t.Fatalf("edit group: %d %s", r.Status, r.Body)
	}
	for _, g := range s.brandList(t, w, groupsAPI) {
		if jsonInt(g["id"]) == vip && (g["commission_rate"] != float64(35) || g["hold_days"] != float64(7)) {
			t.Fatalf("VIP after edit: %v", g)
		}
	}

	// Move Ana to VIP, then suspend and reactivate her.
	r := b.submit(p, fmt.Sprintf("%s/partners/%d/group", base, ana), url.Values{"group_id": {fmt.Sprint(vip)}})
	if r.Status != 303 {
		t.Fatalf("move: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Partner Ana Creator moved to the group VIP.", fmt.Sprintf(`<option value="%d" selected>VIP</option>`, vip))
	partner := s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/partners/%d", w.ProgramID, ana), w.Owner, nil)["data"].(map[string]any)
	if partner["group_name"] != "VIP" {
		t.Fatalf("partner after move: %v", partner)
	}
	// A group that is not one of the program's is the API's refusal, in
	// Ana's row; she stays in VIP.
	r = b.submit(p, fmt.Sprintf("%s/partners/%d/group", base, ana), url.Values{"group_id": {"999999"}})
	if r.Status < 400 || r.Status > 499 {
		t.Fatalf("move to another program's group: %d %s", r.Status, r.Body)
	}
	r.mustContain(t, fmt.Sprintf(`<p class="field-error" id="pg-%d-err">`, ana))

	if r := b.submit(p, fmt.Sprintf("%s/partners/%d/status", base, ana), url.Values{"status": {"suspended"}}); r.Status != 303 {
		t.Fatalf("suspend: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Partner Ana Creator suspended.", `<span class="status bad">suspended</span>`, "Reactivate Ana Creator")
	if r := b.submit(p, fmt.Sprintf("%s/partners/%d/status", base, ana), url.Values{"status": {"active"}}); r.Status != 303 {
		t.Fatalf("reactivate: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Partner Ana Creator is active.", "Suspend Ana Creator")
	partner = s.apiBody(t, 200, "GET", fmt.Sprintf("/api/v1/programs/%d/partners/%d", w.ProgramID, ana), w.Owner, nil)["data"].(map[string]any)
	if partner["status"] != "active" || partner["group_name"] != "VIP" {
		t.Fatalf("partner at the end: %v", partner)
	}
}

// TestBrandInvitesAndApplications: the invite form invites the emails
// typed and says what it skipped and why; invites are resent and
// cancelled from their row; applications are approved and rejected.
func TestBrandInvitesAndApplications(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	w := s.brand(t)
	s.enroll(t, w, "Ana Creator", "ana@creator.example")
	b := s.browser(t).withCookie("pt_session", w.Owner)
	base := fmt.Sprintf("/app/programs/%d", w.ProgramID)
	invitesAPI := fmt.Sprintf("/api/v1/programs/%d/invites", w.ProgramID)
	p := b.get(base + "/partners")

	// An email that is not one, then 51 emails: the API's messages next
	// to the field, the text kept, nobody invited.
	bad := b.submit(p, base+"/invites", url.Values{"emails": {"ok@new.example\nnope"}})
	if bad.Status != 400 {
		t.Fatalf("bad email: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `<p class="field-error" id="invite-emails-err">`+ledger.MsgInviteEmail(1)+`</p>`,
		`aria-invalid="true" aria-describedby="invite-emails-err">ok@new.example`+"\nnope</textarea>")
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("p%d@new.example", i)
	}
	bad = b.submit(p, base+"/invites", url.Values{"emails": {strings.Join(many, ", ")}})
	if bad.Status != 400 {
		t.Fatalf("51 emails: %d %s", bad.Status, bad.Body)
	}
	bad.mustContain(t, `<p class="field-error" id="invite-emails-err">`+ledger.MsgInviteEmails+`</p>`)
	if n := len(s.brandList(t, w, invitesAPI)); n != 0 {
		t.Fatalf("%d invites after refused forms", n)
	}

	// Two new emails and a partner: two invited, one skipped with why.
	r := b.submit(p, base+"/invites", url.Values{"emails": {"new1@new.example\nnew2@new.example, ana@creator.example"}, "message": {"Join us"}})
	if r.Status != 303 || r.Location != base+"/partners" {
		t.Fatalf("invite: %d %q %s", r.Status, r.Location, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Invited 2, skipped 1. Skipped ana@creator.example (already a partner). Invited new1@new.example. Invited new2@new.example.",
		"Resend invite to new1@new.example", "Cancel invite to new2@new.example")
	invites := s.brandList(t, w, invitesAPI)
	if len(invites) != 2 {
		t.Fatalf("invites: %v", invites)
	}
	ids := map[string]int64{}
	for _, inv := range invites {
		ids[inv["email"].(string)] = jsonInt(inv["id"])
	}

	// Resent at once: the API's refusal in the invite's row.
	r = b.submit(p, fmt.Sprintf("%s/invites/%d/resend", base, ids["new1@new.example"]), url.Values{})
	if r.Status < 400 || r.Status > 499 {
		t.Fatalf("resend too soon: %d %s", r.Status, r.Body)
	}
	r.mustContain(t, `<p class="form-error" role="alert">`+ledger.MsgInviteResendTooSoon+`</p>`)
	// Cancelled: gone from the open invites.
	if r := b.submit(p, fmt.Sprintf("%s/invites/%d/cancel", base, ids["new2@new.example"]), url.Values{}); r.Status != 303 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Invite cancelled for new2@new.example.", "Resend invite to new1@new.example")
	if strings.Contains(p.Body, "Cancel invite to new2@new.example") {
		t.Fatal("the cancelled invite is still open")
	}

	// Two applications on the public page: one approved, one rejected.
	slug := fmt.Sprintf("brand-pages-%d", w.ProgramID)
	s.api(t, 200, "PATCH", fmt.Sprintf("/api/v1/programs/%d/settings", w.ProgramID), w.Owner, map[string]any{"slug": slug})
	for _, who := range []string{"Carla", "Dan"} {
		s.api(t, 202, "POST", "/api/v1/public/programs/"+slug+"/applications", "",
			map[string]any{"name": who + " Applicant", "email": strings.ToLower(who) + "@apply.example"})
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Approve Carla Applicant", "Reject Dan Applicant", "carla@apply.example")
	apps := map[string]int64{}
	for _, a := range s.brandList(t, w, fmt.Sprintf("/api/v1/programs/%d/applications", w.ProgramID)) {
		apps[a["email"].(string)] = jsonInt(a["id"])
	}
	if r := b.submit(p, fmt.Sprintf("%s/applications/%d/approve", base, apps["carla@apply.example"]), url.Values{"group_id": {""}}); r.Status != 303 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if r := b.submit(p, fmt.Sprintf("%s/applications/%d/reject", base, apps["dan@apply.example"]), url.Values{"reason": {"Not a fit"}}); r.Status != 303 {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
	p = b.get(base + "/partners")
	p.mustContain(t, "Application of Dan Applicant rejected.", "No application waiting.", "carla@apply.example")
	for _, a := range s.brandList(t, w, fmt.Sprintf("/api/v1/programs/%d/applications", w.ProgramID)) {
		want := map[string]string{"carla@apply.example": "approved", "dan@apply.example": "rejected"}[a["email"].(string)]
		if a["status"] != want {
			t.Fatalf("application %v, want %s", a, want)
		}
		if a["email"] == "dan@apply.example" && a["reason"] != "Not a fit" {
			t.Fatalf("reason: %v", a)
		}
	}
}
