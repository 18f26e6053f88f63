package web

import (
	"fmt"
	"io"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// groupFields are the fields of the group forms, as the API names them.
var groupFields = []string{"name", "commission_type", "commission_rate", "duration_months", "hold_days"}

// groupBody is a group form's fields as the API's JSON; fields left
// empty are not sent (a new group takes the program's terms for them).
func groupBody(f *form) io.Reader {
	return f.json("commission_rate", "duration_months", "hold_days")
}

// brandCreateGroup is the form of a new group of partners.
func (p *Pages) brandCreateGroup(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	f := readForm(c, "group", groupFields...)
	ctx, auth := p.as(c)
	resp, err := p.api.CreatePartnerGroupWithBodyWithResponse(ctx, id, jsonType, groupBody(f), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, "Group "+resp.JSON201.Data.Name+" created.", programPath(id, "partners"))
}

// brandUpdateGroup is the edit form of a group: its name and terms.
func (p *Pages) brandUpdateGroup(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	groupID, err := pathID(c, "groupId")
	if err != nil {
		return err
	}
	f := readForm(c, fmt.Sprintf("group-%d", groupID), groupFields...)
	ctx, auth := p.as(c)
	resp, err := p.api.UpdatePartnerGroupWithBodyWithResponse(ctx, id, groupID, jsonType, groupBody(f), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, "Group "+resp.JSON200.Data.Name+" saved.", programPath(id, "partners"))
}

// groupForm is a group form on the partners page: a group's edit form
// (filled with its terms), or the new group form. When it is the form
// that was sent and refused, it shows what was sent and the API's message.
type groupForm struct {
	ID       string // element id prefix
	Name     string // the form's name (group-<id> or group)
	Group    *apiclient.PartnerGroup
	Sent     *form
	Currency string
}

// groupForms are the page's group forms: one per group, then a new one.
func groupForms(gs []apiclient.PartnerGroup, f *form, currency string) (edit []groupForm, create groupForm) {
	sent := func(name string) *form {
		if f.Is(name) {
			return f
		}
		return nil
	}
	for i := range gs {
		name := fmt.Sprintf("group-%d", gs[i].Id)
		edit = append(edit, groupForm{ID: fmt.Sprintf("g%d", gs[i].Id), Name: name, Group: &gs[i], Sent: sent(name), Currency: currency})
	}
	return edit, groupForm{ID: "group", Name: "group", Sent: sent("group"), Currency: currency}
}

// Value is what a field shows: what was sent, else the group's own term.
func (g groupForm) Value(field string) string {
	if g.Sent != nil || g.Group == nil {
		return g.Sent.Value(field)
	}
	switch field {
	case "name":
		return g.Group.Name
	case "commission_type":
		return string(g.Group.CommissionType)
	case "commission_rate":
		return g.Group.CommissionRate.String()
	case "duration_months":
		return strconv.Itoa(g.Group.DurationMonths)
	case "hold_days":
		return strconv.Itoa(g.Group.HoldDays)
	}
	return ""
}

// Err is the API's message for a field of this form.
func (g groupForm) Err(field string) string { return g.Sent.Err(field) }

// Types are the commission types to choose from.
func (g groupForm) Types() []tab { return groupTypes }
