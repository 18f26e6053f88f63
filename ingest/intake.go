package ingest

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Rate limits of invites, applications and the public page (issue 24).
const (
	// limitPartnerIntake: the brand's invite and application routes, 120
	// requests a minute per dashboard token, one bucket for all seven.
	limitPartnerIntake = 120
	// limitPublicProgram: the public page, 60 requests a minute per IP.
	limitPublicProgram = 60
	// limitPublicApply: applications, 10 a minute per IP.
	limitPublicApply = 10
)

const (
	msgNoIntakeRead    = "You do not have access to this program's invites and applications"
	msgIntakeAdminOnly = "Only a workspace owner or admin can invite partners or decide applications"
)

// intakeRoutes are how partners join a program: the brand's invites and
// its review of applications (dashboard sign-in: members read, owners
// and admins change), and the public page with its application form (no
// sign-in, rate-limited by IP, callable from any origin).
func (s *Server) intakeRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("partner_intake", limitPartnerIntake, byToken)
	s.limitedRoute("POST", "/api/v1/programs/:id/invites", withStyle(defaultStyle), limit, dashboard, s.createInvites)
	s.limitedRoute("GET", "/api/v1/programs/:id/invites", withStyle(defaultStyle), limit, dashboard, s.listInvites)
	s.limitedRoute("POST", "/api/v1/programs/:id/invites/:inviteId/resend", withStyle(defaultStyle), limit, dashboard, s.resendInvite)
	s.limitedRoute("DELETE", "/api/v1/programs/:id/invites/:inviteId", withStyle(defaultStyle), limit, dashboard, s.cancelInvite)
	s.limitedRoute("GET", "/api/v1/programs/:id/applications", withStyle(defaultStyle), limit, dashboard, s.listApplications)
	s.limitedRoute("POST", "/api/v1/programs/:id/applications/:applicationId/approve", withStyle(defaultStyle), limit, dashboard, s.approveApplication)
	s.limitedRoute("POST", "/api/v1/programs/:id/applications/:applicationId/reject", withStyle(defaultStyle), limit, dashboard, s.rejectApplication)

	s.browserRoute("GET", "/api/v1/public/programs/:slug", withStyle(defaultStyle),
		s.rateLimit("public_program", limitPublicProgram, byIP), s.publicProgram)
	s.browserRoute("POST", "/api/v1/public/programs/:slug/applications", withStyle(defaultStyle),
		s.rateLimit("public_apply", limitPublicApply, byIP), s.applyToProgram)
}

// createInvites is POST /api/v1/programs/:id/invites (owner or admin).
func (s *Server) createInvites(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgIntakeAdminOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	r, err := ledger.InviteRequestInput{
		Emails:     f.Strings("emails"),
		PartnerIDs: f.Int64s("partner_ids"),
		GroupID:    f.Int("group_id"),
		Message:    f.String("message"),
	}.Validate(sessionOf(c).UserID)
	if err != nil {
		return err
	}
	res, err := s.svc.Invites.CreateInvites(c.UserContext(), programID, r)
	if err != nil {
		return err
	}
	now := s.now()
	invited := make([]fiber.Map, len(res.Invited))
	for i := range res.Invited {
		invited[i] = inviteJSON(&res.Invited[i], now)
	}
	skipped := make([]fiber.Map, len(res.Skipped))
	for i, sk := range res.Skipped {
		skipped[i] = fiber.Map{"email": nullString(sk.Email), "partner_id": sk.PartnerID, "reason": sk.Reason}
	}
	return ok(c, fiber.StatusOK, fiber.Map{"invited": invited, "skipped": skipped})
}

// listInvites is GET /api/v1/programs/:id/invites (any member).
func (s *Server) listInvites(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoIntakeRead)
	if err != nil {
		return err
	}
	q, err := ledger.InviteQueryInput{
		Page: queryInt(c, "page"), PageSize: queryInt(c, "pageSize"), Status: queryString(c, "status"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	page, err := s.svc.Invites.ListInvites(c.UserContext(), q)
	if err != nil {
		return err
	}
	now := s.now()
	data := make([]fiber.Map, len(page.Invites))
	for i := range page.Invites {
		data[i] = inviteJSON(&page.Invites[i], now)
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// resendInvite is POST /api/v1/programs/:id/invites/:inviteId/resend
// (owner or admin): a new email with a new link; the invite expires 30
// days from now.
func (s *Server) resendInvite(c *fiber.Ctx) error {
	return s.changeInvite(c, s.svc.Invites.ResendInvite)
}

// cancelInvite is DELETE /api/v1/programs/:id/invites/:inviteId (owner or
// admin): the invite is cancelled (kept, listed as cancelled).
func (s *Server) cancelInvite(c *fiber.Ctx) error {
	return s.changeInvite(c, s.svc.Invites.CancelInvite)
}

// changeInvite runs an owner's or admin's change of one invite of the
// program in the path and answers the invite as it is after it.
func (s *Server) changeInvite(c *fiber.Ctx, change func(ctx context.Context, programID, inviteID, actor int64) (*ledger.Invite, error)) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgIntakeAdminOnly)
	if err != nil {
		return err
	}
	inviteID, err := pathID(c, "inviteId", "invite")
	if err != nil {
		return err
	}
	inv, err := change(c.UserContext(), programID, inviteID, sessionOf(c).UserID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, inviteJSON(inv, s.now()))
}

// listApplications is GET /api/v1/programs/:id/applications (any member).
func (s *Server) listApplications(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoIntakeRead)
	if err != nil {
		return err
	}
	q, err := ledger.ApplicationQueryInput{
		Page: queryInt(c, "page"), PageSize: queryInt(c, "pageSize"), Status: queryString(c, "status"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	page, err := s.svc.Applications.ListApplications(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Applications))
	for i := range page.Applications {
		data[i] = applicationJSON(&page.Applications[i])
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// approveApplication is POST …/applications/:applicationId/approve (owner
// or admin), with an optional group_id (default: the default group).
func (s *Server) approveApplication(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgIntakeAdminOnly)
	if err != nil {
		return err
	}
	appID, f, err := pathIDAndFields(c, "applicationId", "application")
	if err != nil {
		return err
	}
	var groupID *int64
	if g := f.Int("group_id"); g.Present {
		if !g.OK() || g.Value < 1 {
			return invalid(ledger.MsgGroupID)
		}
		groupID = &g.Value
	}
	a, err := s.svc.Applications.ApproveApplication(c.UserContext(), programID, appID, sessionOf(c).UserID, groupID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, applicationJSON(a))
}

// rejectApplication is POST …/applications/:applicationId/reject (owner
// or admin), with an optional reason the applicant's email carries.
func (s *Server) rejectApplication(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgIntakeAdminOnly)
	if err != nil {
		return err
	}
	appID, f, err := pathIDAndFields(c, "applicationId", "application")
	if err != nil {
		return err
	}
	reason, err := ledger.ValidateReason(f.String("reason"))
	if err != nil {
		return err
	}
	a, err := s.svc.Applications.RejectApplication(c.UserContext(), programID, appID, sessionOf(c).UserID, reason)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, applicationJSON(a))
}

// publicProgram is GET /api/v1/public/programs/:slug: the terms of an
// active program, nothing private.
func (s *Server) publicProgram(c *fiber.Ctx) error {
	p, err := s.svc.Applications.PublicProgram(c.UserContext(), c.Params("slug"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"slug":             p.Slug,
		"name":             p.Name,
		"domain":           p.Domain,
		"commission":       p.CommissionWords(),
		"commission_type":  string(p.CommissionType),
		"commission_rate":  decimalJSON(p.CommissionRate.String()),
		"duration_months":  p.DurationMonths,
		"cookie_duration":  p.CookieDuration,
		"hold_days":        p.HoldDays,
		"currency":         string(p.Currency),
		"partner_approval": p.PartnerApproval,
	})
}

// applyToProgram is POST /api/v1/public/programs/:slug/applications: 201
// with a new application, 200 with the pending one of the same email.
// The answer echoes only what the applicant sent and the status.
func (s *Server) applyToProgram(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	r, err := ledger.ApplicationInput{
		Name: f.String("name"), Email: f.String("email"), Message: f.String("message"), Website: f.String("website"),
	}.Validate()
	if err != nil {
		return err
	}
	a, _, err := s.svc.Applications.Apply(c.UserContext(), c.Params("slug"), r)
	if err != nil {
		return err
	}
	// One answer whatever happened, so that it tells nobody whether the
	// email applied before or is already a partner of the program.
	return ok(c, fiber.StatusAccepted, fiber.Map{"email": a.Email, "status": a.Status})
}

func inviteJSON(i *ledger.Invite, now time.Time) fiber.Map {
	return fiber.Map{
		"id":           i.ID,
		"program_id":   i.ProgramID,
		"email":        i.Email,
		"status":       i.StatusAt(now),
		"group_id":     i.GroupID,
		"message":      nullString(i.Message),
		"partner_id":   i.PartnerID,
		"expires_at":   formatTime(i.ExpiresAt),
		"last_sent_at": formatTime(i.LastSentAt),
		"accepted_at":  nullTime(i.AcceptedAt),
		"cancelled_at": nullTime(i.CancelledAt),
		"created_at":   formatTime(i.CreatedAt),
		"updated_at":   formatTime(i.UpdatedAt),
	}
}

func applicationJSON(a *ledger.Application) fiber.Map {
	return fiber.Map{
		"id":         a.ID,
		"program_id": a.ProgramID,
		"email":      a.Email,
		"name":       a.Name,
		"message":    nullString(a.Message),
		"website":    nullString(a.Website),
		"status":     a.Status,
		"reason":     nullString(a.Reason),
		"group_id":   a.GroupID,
		"partner_id": a.PartnerID,
		"decided_at": nullTime(a.DecidedAt),
		"created_at": formatTime(a.CreatedAt),
	}
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}

// Int64s reads a JSON array of integers that fit in 64 bits.
func (f fields) Int64s(name string) ledger.Input[[]int64] {
	v, ok := f.raw(name)
	if !ok {
		return ledger.Input[[]int64]{}
	}
	var nums []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &nums) != nil {
		return ledger.BadInput[[]int64]()
	}
	out := make([]int64, len(nums))
	for i, n := range nums {
		x, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return ledger.BadInput[[]int64]()
		}
		out[i] = x
	}
	return ledger.Some(out)
}
