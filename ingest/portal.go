package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitPartnerPortal is the rate limit of the partner API: 120 requests
// a minute per partner token, one bucket ("partner_portal") for every
// route of it.
const limitPartnerPortal = 120

// partnerPortalRoutes are the partner API (issue 26): what a signed-in
// partner reads and does about its own programs, invites, links, numbers,
// money and notifications. Every route is behind requirePartner and
// scoped to the session's partner; another partner's rows are 404.
func (s *Server) partnerPortalRoutes() {
	limit := s.rateLimit("partner_portal", limitPartnerPortal, byToken)
	route := func(method, path string, h fiber.Handler) {
		s.limitedRoute(method, path, withStyle(defaultStyle), limit, s.requirePartner, h)
	}
	route("GET", "/api/v1/partner/programs", s.partnerPrograms)
	route("GET", "/api/v1/partner/invites", s.partnerInvites)
	route("POST", "/api/v1/partner/invites/accept", s.acceptPartnerInviteToken)
	route("POST", "/api/v1/partner/invites/:inviteId/accept", s.acceptPartnerInvite)
	route("POST", "/api/v1/partner/invites/:inviteId/decline", s.declinePartnerInvite)
	route("POST", "/api/v1/partner/applications", s.partnerApply)
	route("GET", "/api/v1/partner/programs/:programId/links", s.partnerLinks)
	route("POST", "/api/v1/partner/programs/:programId/links", s.createPartnerLink)
	route("GET", "/api/v1/partner/programs/:programId/stats", s.partnerStats)
	route("GET", "/api/v1/partner/commissions", s.partnerCommissions)
	route("GET", "/api/v1/partner/balances", s.partnerBalances)
	route("GET", "/api/v1/partner/notifications", s.partnerNotifications)
	route("POST", "/api/v1/partner/notifications/read-all", s.readAllPartnerNotifications)
	route("POST", "/api/v1/partner/notifications/:notificationId/read", s.readPartnerNotification)
}

// partnerPrograms is GET /api/v1/partner/programs: every enrollment of
// the partner (active, suspended, removed), newest first.
func (s *Server) partnerPrograms(c *fiber.Ctx) error {
	list, err := s.svc.Portal.PartnerPrograms(c.UserContext(), partnerOf(c).PartnerID)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(list))
	for i := range list {
		data[i] = partnerProgramJSON(&list[i])
	}
	return ok(c, fiber.StatusOK, data)
}

// partnerInvites is GET /api/v1/partner/invites: the pending, unexpired
// invites to the partner's email, newest first.
func (s *Server) partnerInvites(c *fiber.Ctx) error {
	list, err := s.svc.Portal.PartnerInvites(c.UserContext(), partnerOf(c).Email)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(list))
	for i, inv := range list {
		data[i] = fiber.Map{
			"id":         inv.ID,
			"program":    fiber.Map{"id": inv.ProgramID, "name": inv.ProgramName, "slug": inv.ProgramSlug},
			"group_name": inv.GroupName,
			"message":    nullString(inv.Message),
			"expires_at": formatTime(inv.ExpiresAt),
		}
	}
	return ok(c, fiber.StatusOK, data)
}

// acceptPartnerInviteToken is POST /api/v1/partner/invites/accept with
// the token of the invite email's link (/partner/invites/<token>).
func (s *Server) acceptPartnerInviteToken(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	tok := f.String("token")
	if !tok.OK() || tok.Value == "" {
		return invalid(ledger.MsgPortalInviteToken)
	}
	sess := partnerOf(c)
	en, err := s.svc.Invites.AcceptInvite(c.UserContext(), tok.Value, sess.Email, sess.Name)
	if err != nil {
		return err
	}
	return s.renderEnrollment(c, en)
}

// acceptPartnerInvite is POST /api/v1/partner/invites/:inviteId/accept:
// an invite the listing showed (to the partner's email; any other is 404).
func (s *Server) acceptPartnerInvite(c *fiber.Ctx) error {
	inviteID, err := pathID(c, "inviteId", "invite")
	if err != nil {
		return err
	}
	sess := partnerOf(c)
	en, err := s.svc.Portal.AcceptInviteByID(c.UserContext(), inviteID, sess.Email, sess.Name)
	if err != nil {
		return err
	}
	return s.renderEnrollment(c, en)
}

// renderEnrollment answers an accepted invite: the program as the
// partner's program listing shows it, and the new link.
func (s *Server) renderEnrollment(c *fiber.Ctx, en *ledger.Enrollment) error {
	list, err := s.svc.Portal.PartnerPrograms(c.UserContext(), en.PartnerID)
	if err != nil {
		return err
	}
	for i := range list {
		if p := &list[i]; p.ProgramID == en.ProgramID {
			link := ledger.BrandLink{Link: ledger.Link{ID: en.LinkID, Code: en.LinkCode}, Domain: p.Domain}
			return ok(c, fiber.StatusOK, fiber.Map{
				"program": partnerProgramJSON(p),
				"link":    fiber.Map{"id": link.ID, "code": link.Code, "url": link.URL()},
			})
		}
	}
	return ledger.NewError(ledger.ENotFound, ledger.MsgPortalProgramNotFound)
}

// declinePartnerInvite is POST /api/v1/partner/invites/:inviteId/decline.
func (s *Server) declinePartnerInvite(c *fiber.Ctx) error {
	inviteID, err := pathID(c, "inviteId", "invite")
	if err != nil {
		return err
	}
	inv, err := s.svc.Portal.DeclineInvite(c.UserContext(), inviteID, partnerOf(c).Email)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"id": inv.ID, "program_id": inv.ProgramID, "status": inv.Status,
		"updated_at": formatTime(inv.UpdatedAt)})
}

// partnerApply is POST /api/v1/partner/applications: the signed-in
// partner applies to the program of a public slug, with its own email
// and name (the public page's application), and an optional message. 201
// with a new application (approved at once under auto approval), 200 with
// the pending one it had; 409 when it is already a partner there.
func (s *Server) partnerApply(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	slug, err := ledger.ValidatePortalSlug(f.String("slug"))
	if err != nil {
		return err
	}
	sess := partnerOf(c)
	r, err := ledger.ApplicationInput{
		Name: ledger.Some(sess.Name), Email: ledger.Some(sess.Email), Message: f.String("message"),
	}.Validate()
	if err != nil {
		return err
	}
	a, created, err := s.svc.Applications.Apply(c.UserContext(), slug, r)
	if err != nil {
		return err
	}
	if a.ID == 0 {
		return ledger.NewError(ledger.EConflict, ledger.MsgAlreadyPartnerApply)
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return ok(c, status, fiber.Map{
		"id":         a.ID,
		"program_id": a.ProgramID,
		"status":     a.Status,
		"message":    nullString(a.Message),
		"created_at": formatTime(a.CreatedAt),
	})
}

// partnerLinks is GET /api/v1/partner/programs/:programId/links: the
// partner's links in a program it is enrolled in, newest first.
func (s *Server) partnerLinks(c *fiber.Ctx) error {
	programID, err := pathID(c, "programId", "program")
	if err != nil {
		return err
	}
	links, err := s.svc.Portal.PartnerLinks(c.UserContext(), partnerOf(c).PartnerID, programID)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(links))
	for i := range links {
		data[i] = partnerLinkJSON(&links[i])
	}
	return ok(c, fiber.StatusOK, data)
}

// createPartnerLink is POST /api/v1/partner/programs/:programId/links
// with the partner's own code: allowed when the program's partner_links
// is on and the partner is active there. Once committed, every edge
// drops the code from its cache (it may remember it as unknown).
func (s *Server) createPartnerLink(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "programId", "program")
	if err != nil {
		return err
	}
	code := f.String("code")
	if !code.OK() || !ledger.ValidLinkCode(code.Value) {
		return invalid(ledger.MsgLinkCode)
	}
	l, err := s.svc.Portal.CreatePartnerLink(c.UserContext(), partnerOf(c).PartnerID, programID, code.Value)
	if err != nil {
		return err
	}
	s.invalidateLink(c, l.Code)
	return ok(c, fiber.StatusCreated, partnerLinkJSON(l))
}

// partnerStats is GET /api/v1/partner/programs/:programId/stats: the
// partner's numbers per day of a window of the program's days, from the
// rollups (the performance endpoint's period, dateFrom and dateTo).
func (s *Server) partnerStats(c *fiber.Ctx) error {
	programID, err := pathID(c, "programId", "program")
	if err != nil {
		return err
	}
	q, err := ledger.PerformanceQueryInput{
		Period:   queryString(c, "period"),
		DateFrom: queryString(c, "dateFrom"),
		DateTo:   queryString(c, "dateTo"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	st, err := s.svc.Portal.PartnerStats(c.UserContext(), partnerOf(c).PartnerID, q)
	if err != nil {
		return err
	}
	days := make([]fiber.Map, len(st.Days))
	for i := range st.Days {
		d := &st.Days[i]
		m := partnerNumbersJSON(&d.PerformanceNumbers, st.Currency)
		m["date"] = ledger.FormatDate(d.Date)
		days[i] = m
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"program_id": programID,
		"currency":   string(st.Currency),
		"period":     q.Period,
		"dateFrom":   ledger.FormatDate(st.Window.From),
		"dateTo":     ledger.FormatDate(st.Window.To),
		"days":       days,
		"totals":     partnerNumbersJSON(&st.Total, st.Currency),
	})
}

// partnerNumbersJSON renders a partner's counters: earnings are the
// commission per currency in major units, the program's currency always
// present, never summed across currencies.
func partnerNumbersJSON(n *ledger.PerformanceNumbers, cur ledger.Currency) fiber.Map {
	earnings := fiber.Map{string(cur): moneyJSON(n.Sales[cur].Commission, cur)}
	for c, s := range n.Sales {
		if s.Conversions != 0 || s.Commission != 0 {
			earnings[string(c)] = moneyJSON(s.Commission, c)
		}
	}
	return fiber.Map{
		"clicks":      n.Clicks,
		"leads":       n.Leads,
		"conversions": n.Conversions(),
		"earnings":    earnings,
	}
}

// partnerCommissions is GET /api/v1/partner/commissions: a page of the
// partner's commissions, newest first, filtered by program_id and status.
// Nothing names the sale's customer.
func (s *Server) partnerCommissions(c *fiber.Ctx) error {
	q, err := ledger.PartnerCommissionQueryInput{
		Page:      queryInt(c, "page"),
		PageSize:  queryInt(c, "pageSize"),
		ProgramID: queryInt(c, "program_id"),
		Status:    queryString(c, "status"),
	}.Validate(partnerOf(c).PartnerID)
	if err != nil {
		return err
	}
	page, err := s.svc.Portal.PartnerCommissions(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Commissions))
	for i, cm := range page.Commissions {
		data[i] = fiber.Map{
			"id":          cm.ID,
			"program":     fiber.Map{"id": cm.ProgramID, "name": cm.ProgramName},
			"status":      cm.Status,
			"amount":      moneyJSON(cm.AmountMinor, cm.Currency),
			"currency":    string(cm.Currency),
			"created_at":  formatTime(cm.CreatedAt),
			"approved_at": nullTime(cm.ApprovedAt),
			"paid_at":     nullTime(cm.PaidAt),
			"payout_id":   cm.PayoutID,
		}
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// partnerBalances is GET /api/v1/partner/balances: per program and
// currency, the approved balance and the pending commissions.
func (s *Server) partnerBalances(c *fiber.Ctx) error {
	list, err := s.svc.Portal.PartnerBalances(c.UserContext(), partnerOf(c).PartnerID)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(list))
	for i, b := range list {
		data[i] = fiber.Map{
			"program":  fiber.Map{"id": b.ProgramID, "name": b.ProgramName},
			"currency": string(b.Currency),
			"balance":  moneyJSON(b.Balance, b.Currency),
			"pending":  moneyJSON(b.Pending, b.Currency),
		}
	}
	return ok(c, fiber.StatusOK, data)
}

// partnerNotifications is GET /api/v1/partner/notifications: the
// partner's in-app notifications, newest first, at most limit (default
// 50, at most 100).
func (s *Server) partnerNotifications(c *fiber.Ctx) error {
	limit, err := ledger.ValidateNotificationLimit(queryInt(c, "limit"))
	if err != nil {
		return err
	}
	list, err := s.svc.Notifications.PartnerNotifications(c.UserContext(), partnerOf(c).PartnerID, limit)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(list))
	for i := range list {
		data[i] = partnerNotificationJSON(&list[i])
	}
	return ok(c, fiber.StatusOK, data)
}

// readPartnerNotification is POST
// /api/v1/partner/notifications/:notificationId/read.
func (s *Server) readPartnerNotification(c *fiber.Ctx) error {
	id, err := pathID(c, "notificationId", "notification")
	if err != nil {
		return err
	}
	n, err := s.svc.Portal.MarkNotificationRead(c.UserContext(), partnerOf(c).PartnerID, id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, partnerNotificationJSON(n))
}

// readAllPartnerNotifications is POST
// /api/v1/partner/notifications/read-all.
func (s *Server) readAllPartnerNotifications(c *fiber.Ctx) error {
	n, err := s.svc.Portal.MarkAllNotificationsRead(c.UserContext(), partnerOf(c).PartnerID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"updated": n})
}

// partnerProgramJSON renders one of the partner's programs.
func partnerProgramJSON(p *ledger.PartnerProgram) fiber.Map {
	return fiber.Map{
		"id":              p.ProgramID,
		"name":            p.Name,
		"slug":            p.Slug,
		"domain":          p.Domain,
		"currency":        string(p.Currency),
		"status":          p.Status,
		"group":           fiber.Map{"id": p.GroupID, "name": p.GroupName},
		"commission":      p.Terms.CommissionWords(),
		"commission_type": string(p.Terms.CommissionType),
		"commission_rate": decimalJSON(p.Terms.CommissionRate.String()),
		"duration_months": p.Terms.DurationMonths,
		"hold_days":       p.Terms.HoldDays,
		"cookie_duration": p.Terms.CookieDuration,
		"partner_links":   p.PartnerLinks,
		"joined_at":       formatTime(p.JoinedAt),
	}
}

// partnerLinkJSON renders a partner's link with its copyable URL.
func partnerLinkJSON(l *ledger.BrandLink) fiber.Map {
	return fiber.Map{
		"id":         l.ID,
		"code":       l.Code,
		"url":        l.URL(),
		"active":     l.Active,
		"clicks":     l.Clicks,
		"created_at": formatTime(l.CreatedAt),
	}
}

// partnerNotificationJSON renders an in-app notification to the partner.
func partnerNotificationJSON(n *ledger.StoredNotification) fiber.Map {
	data := n.Data
	if data == nil {
		data = map[string]any{}
	}
	return fiber.Map{
		"id":         n.ID,
		"kind":       n.Kind,
		"title":      n.Title,
		"body":       n.Body,
		"data":       data,
		"created_at": formatTime(n.CreatedAt),
		"read_at":    nullTime(n.ReadAt),
	}
}

// withPortalSettings adds the partner portal's settings (issue 26) to a
// program's settings: partner_links, and minimum_payout in major units of
// the program's currency.
func withPortalSettings(m fiber.Map, p *ledger.Program) fiber.Map {
	m["partner_links"] = p.PartnerLinks
	m["minimum_payout"] = decimalJSON(p.MinimumPayout.StringFixed(p.Currency.Exponent()))
	return m
}
