package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandInvite is the invite form: emails typed one a line or separated by
// commas, an optional group and message. The API takes at most 50 at once
// and says so; what it invited and skipped (and why) is the flash of the
// partners page.
func (p *Pages) brandInvite(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "invite", "emails", "group_id", "message")
	ctx, auth := p.as(c)
	resp, err := p.api.CreateInvitesWithBodyWithResponse(ctx, id, jsonType, inviteBody(f), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, inviteOutcome(resp.JSON200), programPath(id, "partners"))
}

// inviteBody is the invite form as the API's JSON: the emails as a list
// (however many were typed: the API says how many it takes), the group
// and message when given.
func inviteBody(f *form) io.Reader {
	body := map[string]any{"emails": splitList(f.Value("emails"))}
	if g := f.Value("group_id"); g != "" {
		body["group_id"] = g
		if numberLiteral.MatchString(g) {
			body["group_id"] = json.Number(g)
		}
	}
	if m := f.Value("message"); m != "" {
		body["message"] = m
	}
	b, _ := json.Marshal(body)
	return bytes.NewReader(b)
}

// splitList reads a list typed in a textarea: items separated by commas,
// semicolons or line breaks, blanks dropped.
func splitList(v string) []string {
	out := []string{}
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == '\n' || r == '\r' }) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// skipReasons say in words why the API skipped an email.
var skipReasons = map[apiclient.InviteSkipReason]string{
	apiclient.InviteSkipReasonAlreadyInvited: "already invited",
	apiclient.InviteSkipReasonAlreadyPartner: "already a partner",
	apiclient.InviteSkipReasonDuplicate:      "listed twice",
	apiclient.InviteSkipReasonUnknownPartner: "unknown partner",
}

// flashLimit is the longest flash the pages carry (takeFlash drops longer).
const flashLimit = 200

// inviteOutcome writes what an invite did in one line that fits a flash:
// how many were invited and skipped, then each skipped email with its
// reason and each invited email, for as long as there is room ("And 3
// more." for the rest; the invited ones are also in the open invites).
func inviteOutcome(r *apiclient.InviteCreateResponse) string {
	head := fmt.Sprintf("Invited %d, skipped %d.", len(r.Data.Invited), len(r.Data.Skipped))
	var items []string
	for _, s := range r.Data.Skipped {
		reason := skipReasons[s.Reason]
		if reason == "" {
			reason = string(s.Reason)
		}
		who := deref(s.Email)
		if who == "" && s.PartnerId != nil {
			who = fmt.Sprintf("partner %d", *s.PartnerId)
		}
		items = append(items, "Skipped "+who+" ("+reason+")")
	}
	for _, inv := range r.Data.Invited {
		items = append(items, "Invited "+inv.Email)
	}
	out := head
	for i, it := range items {
		reserve := 0
		if i < len(items)-1 {
			reserve = len(" And 99 more.")
		}
		if len(out)+len(" "+it+".")+reserve > flashLimit {
			return out + fmt.Sprintf(" And %d more.", len(items)-i)
		}
		out += " " + it + "."
	}
	return out
}

// brandResendInvite sends a pending invite's email again.
func (p *Pages) brandResendInvite(c *fiber.Ctx) error {
	return p.changeInvite(c, "Invite sent again to ", func(id, inviteID int64) (*apiclient.Invite, error) {
		ctx, auth := p.as(c)
		resp, err := p.api.ResendInviteWithResponse(ctx, id, inviteID, auth)
		if err = apiCheck(resp, err); err != nil {
			return nil, err
		}
		return &resp.JSON200.Data, nil
	})
}

// brandCancelInvite cancels a pending invite.
func (p *Pages) brandCancelInvite(c *fiber.Ctx) error {
	return p.changeInvite(c, "Invite cancelled for ", func(id, inviteID int64) (*apiclient.Invite, error) {
		ctx, auth := p.as(c)
		resp, err := p.api.CancelInviteWithResponse(ctx, id, inviteID, auth)
		if err = apiCheck(resp, err); err != nil {
			return nil, err
		}
		return &resp.JSON200.Data, nil
	})
}

// changeInvite runs a change of one invite; a refusal (resent too soon, no
// longer pending) is shown in the invite's row.
func (p *Pages) changeInvite(c *fiber.Ctx, done string, change func(id, inviteID int64) (*apiclient.Invite, error)) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	inviteID, err := pathID(c, "inviteId")
	if err != nil {
		return err
	}
	inv, err := change(id, inviteID)
	if err != nil {
		f := readForm(c, fmt.Sprintf("invite-%d", inviteID))
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, done+inv.Email+".", programPath(id, "partners"))
}
