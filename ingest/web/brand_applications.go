package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"
)

// brandApproveApplication approves a pending application, into the group
// chosen (empty: the program's default group).
func (p *Pages) brandApproveApplication(c *fiber.Ctx) error {
	return p.decideApplication(c, "group_id", func(id, appID int64, f *form) (string, error) {
		ctx, auth := p.as(c)
		resp, err := p.api.ApproveApplicationWithBodyWithResponse(ctx, id, appID, jsonType, f.json("group_id"), auth)
		if err = apiCheck(resp, err); err != nil {
			return "", err
		}
		return "Application of " + resp.JSON200.Data.Name + " approved: they are a partner now.", nil
	})
}

// brandRejectApplication rejects a pending application with an optional
// reason, which the applicant's email carries.
func (p *Pages) brandRejectApplication(c *fiber.Ctx) error {
	return p.decideApplication(c, "reason", func(id, appID int64, f *form) (string, error) {
		ctx, auth := p.as(c)
		resp, err := p.api.RejectApplicationWithBodyWithResponse(ctx, id, appID, jsonType, f.json(), auth)
		if err = apiCheck(resp, err); err != nil {
			return "", err
		}
		return "Application of " + resp.JSON200.Data.Name + " rejected.", nil
	})
}

// decideApplication runs a decision on one application; a refusal is
// shown in the application's row, next to its field when it names it.
func (p *Pages) decideApplication(c *fiber.Ctx, field string, decide func(id, appID int64, f *form) (string, error)) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	appID, err := pathID(c, "applicationId")
	if err != nil {
		return err
	}
	f := readForm(c, fmt.Sprintf("application-%d", appID), field)
	msg, err := decide(id, appID, f)
	if err != nil {
		if status, shown := f.refuse(err); shown {
			return p.showBrandPartners(c, status, f)
		}
		return err
	}
	return p.flash(c, msg, programPath(id, "partners"))
}
