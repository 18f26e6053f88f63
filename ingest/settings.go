package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

const (
	msgSettingsAdminOnly = "Only a workspace owner or admin can change the program's settings"
	msgNoSettingsRead    = "You do not have access to this program's settings"
)

// getSettings is GET /api/v1/programs/:id/settings: every program field,
// the key only masked, and whether a webhook signing secret is set.
func (s *Server) getSettings(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermSettingsRead, msgNoSettingsRead)
	if err != nil {
		return err
	}
	p, err := s.svc.Programs.Program(c.UserContext(), programID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, withPortalSettings(settingsJSON(p), p))
}

// patchSettings is PATCH /api/v1/programs/:id/settings (owner or admin):
// the present fields are validated as CLI init validates them and applied
// together; absent ones keep their value. Once committed, the
// ProgramChanged hook tells every edge instance to drop what it cached.
func (s *Server) patchSettings(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermSettingsWrite, msgSettingsAdminOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	p, err := s.svc.Settings.UpdateSettings(c.UserContext(), programID, settingsInput(f))
	if err != nil {
		return err
	}
	if s.programChanged != nil {
		s.programChanged(c.UserContext(), programID)
	}
	return ok(c, fiber.StatusOK, withPortalSettings(settingsJSON(p), p))
}

// programWithPermission reads the program id in the path parameter param
// and checks that the signed-in user's role in the program's workspace
// holds perm. Errors: ENotFound (program), EForbidden (not a member; a role
// without perm, with the message denied).
func (s *Server) programWithPermission(c *fiber.Ctx, param, perm, denied string) (int64, error) {
	programID, err := pathID(c, param, "program")
	if err != nil {
		return 0, err
	}
	role, err := s.svc.Accounts.ProgramRole(c.UserContext(), sessionOf(c).UserID, programID)
	if err != nil {
		return 0, err
	}
	if !role.Can(perm) {
		return 0, ledger.NewError(ledger.EForbidden, denied)
	}
	return programID, nil
}

// settingsJSON renders a program's settings: the program as every read
// renders it, plus whether a processor webhook signing secret is set (the
// secret itself is never returned).
func settingsJSON(p *ledger.Program) fiber.Map {
	m := programJSON(p)
	m["stripe_webhook_secret_set"] = p.StripeSecretSet
	m["slug"] = p.Slug
	m["partner_approval"] = p.PartnerApproval
	m["timezone"] = p.Timezone
	return m
}

// settingsInput reads the settings fields of a request body: the program
// fields, the public page's slug and partner_approval, and the webhook
// signing secret.
func settingsInput(f fields) ledger.SettingsInput {
	return ledger.SettingsInput{
		Program:             programInput(f),
		StripeWebhookSecret: f.String("stripe_webhook_secret"),
		Slug:                f.String("slug"),
		PartnerApproval:     f.String("partner_approval"),
		Timezone:            f.String("timezone"),
		PartnerLinks:        f.Bool("partner_links"),
		MinimumPayout:       f.Decimal("minimum_payout"),
	}
}
