package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// myPrograms lists the programs of the person's workspaces.
func (p *Pages) myPrograms(c *fiber.Ctx, token string) ([]apiclient.DashMyProgram, error) {
	ctx, auth := p.asToken(c, token)
	resp, err := p.api.ListMyProgramsWithResponse(ctx, auth)
	if err = apiCheck(resp, err); err != nil {
		return nil, err
	}
	return resp.JSON200.Data, nil
}

// brandPrograms is GET /app/: the programs of the person's workspaces, and
// the form of a new one (the first thing a new brand does).
func (p *Pages) brandPrograms(c *fiber.Ctx) error {
	return p.showBrandPrograms(c, fiber.StatusOK, nil)
}

func (p *Pages) showBrandPrograms(c *fiber.Ctx, status int, f *form) error {
	progs, err := p.myPrograms(c, tokenOf(c))
	if err != nil {
		return err
	}
	if f == nil {
		f = &form{Values: map[string]string{"commission_type": "percent", "currency": "USD"}}
	}
	return p.render(c, status, "brand_programs", view{Title: "Programs", Form: f, Data: map[string]any{
		"Programs": progs, "CommissionTypes": commissionTypes, "Currencies": currencies,
		"Workspaces": managedWorkspaces(progs),
	}})
}

// workspace is one the person may create programs in.
type workspace struct {
	ID   int64
	Name string
}

// managedWorkspaces are the workspaces the person owns or administers, as
// their programs show them, when there are several: the API then needs
// to be told which one a new program goes in (with one or none, it picks).
func managedWorkspaces(progs []apiclient.DashMyProgram) []workspace {
	var out []workspace
	seen := map[int64]bool{}
	for _, p := range progs {
		if (p.Role == "owner" || p.Role == "admin") && !seen[p.WorkspaceId] {
			seen[p.WorkspaceId] = true
			out = append(out, workspace{ID: p.WorkspaceId, Name: p.WorkspaceName})
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// programFields are the fields of the new-program form, in its order.
var programFields = []string{"workspace_id", "name", "domain", "commission_type", "commission_rate", "currency", "hold_days", "cookie_duration", "duration_months"}

// brandCreateProgram is POST /app/programs: a new program in the person's
// workspace (a new workspace when they have none), then its overview.
func (p *Pages) brandCreateProgram(c *fiber.Ctx) error {
	f := readForm(c, "program", programFields...)
	ctx, auth := p.as(c)
	resp, err := p.api.CreateMyProgramWithBodyWithResponse(ctx, "application/json",
		f.json("workspace_id", "commission_rate", "hold_days", "cookie_duration", "duration_months"), auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseField(f, err); shown {
			return p.showBrandPrograms(c, status, f)
		}
		return err
	}
	prog := resp.JSON201.Data
	return p.flash(c, "Program "+prog.Name+" created. Next: generate its key in Settings and add the tracker to your site.",
		"/app/programs/"+strconv.FormatInt(prog.Id, 10))
}
