package ingest

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// GET /api/v1/programs/me/readiness and /api/v1/programs/me/analytics/sources:
// a program key's own program, 30 requests a minute per key each, errors
// in the typed envelope (invalid_key 401s with messages ending in a
// period; internal_error 500s with retry_after_seconds 10).

var (
	readinessStyle = errorStyle{typed: true, retryAfter: 10, internalMessage: "Failed to compute readiness. Retry shortly."}
	sourcesStyle   = errorStyle{typed: true, retryAfter: 10, internalMessage: "Failed to compute analytics sources. Retry shortly."}
)

// timeOrNull renders a time, or JSON null.
func timeOrNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}

func nullIfBlank(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// readiness is GET /api/v1/programs/me/readiness: the integration verdict
// as a bare object (the reference clients read it bare, or inside data).
// It is computed afresh on every call, so force_recheck (accepted) changes
// nothing.
func (s *Server) readiness(c *fiber.Ctx) error {
	return s.renderReadiness(c, programKeyOf(c).ProgramID)
}

// renderReadiness answers the readiness checklist of a program: the key's
// own (above) or one a dashboard user belongs to (dashboardprograms.go).
func (s *Server) renderReadiness(c *fiber.Ctx, programID int64) error {
	now := s.now().UTC()
	f, err := s.svc.Readiness.ReadinessFacts(c.UserContext(), programID, now)
	if err != nil {
		return err
	}
	r := ledger.EvaluateReadiness(*f, now)
	gates := fiber.Map{}
	for _, id := range ledger.GateOrder {
		g := r.Gates[id]
		m := fiber.Map{"status": g.Status, "next_action": nullIfBlank(g.NextAction)}
		switch id {
		case ledger.GatePayout:
			m["mode"] = nullIfBlank(g.Mode)
			m["endpoint"] = nil
			if g.Endpoint != "" {
				m["endpoint"] = s.cfg.PublicBaseURL + g.Endpoint
			}
		case ledger.GateTracking:
			m["detail"] = g.Detail
			m["checked_at"] = formatTime(g.CheckedAt)
		case ledger.GateLive:
			m["test_chain"] = nil
			m["last_chain_at"] = nil
			if g.TestChain != nil {
				m["test_chain"] = verdictJSON(*g.TestChain)
				m["last_chain_at"] = formatTime(f.LastChain.CreatedAt)
			}
		}
		gates[id] = m
	}
	return c.JSON(fiber.Map{
		"program_id":           r.ProgramID,
		"state":                r.State,
		"integration_verified": r.IntegrationVerified,
		"blocker":              nullIfBlank(r.Blocker),
		"gates":                gates,
		"last_event_at": fiber.Map{
			"click": timeOrNull(f.LastClickAt),
			"lead":  timeOrNull(f.LastLeadAt),
			"sale":  timeOrNull(f.LastSaleAt),
		},
		"counts_24h": fiber.Map{
			"clicks": f.Counts24h.Clicks,
			"leads":  f.Counts24h.Leads,
			"sales":  f.Counts24h.Sales,
		},
		"key_rotated_at": timeOrNull(f.KeyRotatedAt),
		"poll":           fiber.Map{"retry_after_seconds": ledger.ReadinessPollSeconds},
	})
}

// sourceJSON renders one group of the sources report.
func sourceJSON(q ledger.SourcesQuery, r ledger.SourceRow) fiber.Map {
	revenue := fiber.Map{}
	for cur, amount := range r.Revenue {
		revenue[string(cur)] = amount
	}
	m := fiber.Map{"clicks": r.Clicks, "leads": r.Leads, "sales": r.Sales, "revenue_cents": revenue}
	if q.ByReferrer {
		m["referrer_domain"] = nullIfBlank(r.ReferrerDomain)
	}
	if q.ByPartner {
		m["partner_id"], m["partner_name"] = nil, nil
		if r.PartnerID != nil {
			m["partner_id"], m["partner_name"] = *r.PartnerID, r.PartnerName
		}
	}
	return m
}

// analyticsSources is GET /api/v1/programs/me/analytics/sources?from=&to=
// &group_by=&limit=: the program's clicks, leads, sales and revenue by
// referrer domain and partner.
func (s *Server) analyticsSources(c *fiber.Ctx) error {
	q, err := ledger.SourcesQueryInput{
		From: c.Query("from"), To: c.Query("to"), Limit: c.Query("limit"), GroupBy: c.Query("group_by"),
	}.Validate(programKeyOf(c).ProgramID, s.now())
	if err != nil {
		return err
	}
	rep, err := s.svc.Analytics.Sources(c.UserContext(), q)
	if err != nil {
		return err
	}
	rows := make([]fiber.Map, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = sourceJSON(q, r)
	}
	totals := sourceJSON(ledger.SourcesQuery{}, rep.Totals)
	return ok(c, fiber.StatusOK, fiber.Map{
		"program_id": q.ProgramID,
		"from":       formatTime(q.From),
		"to":         formatTime(q.To),
		"group_by":   q.GroupBy(),
		"groups":     rep.Groups,
		"sources":    rows,
		"totals":     totals,
	})
}
