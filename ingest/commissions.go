package ingest

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitCommissionReview is the rate limit of the brand's commission review
// and audit routes: 120 requests a minute per dashboard token, one bucket
// ("commission_review") shared by the four routes.
const limitCommissionReview = 120

const (
	msgNoCommissionsRead    = "You do not have access to this program's commissions"
	msgCommissionsAdminOnly = "Only a workspace owner or admin can review the program's commissions"
	msgNoAuditRead          = "You do not have access to this program's audit log"
)

// commissionCSVHeader names the CSV export's columns, in order.
var commissionCSVHeader = []string{
	"id", "created_at", "status", "partner_id", "partner_name", "partner_email", "sale_id", "transaction_id",
	"currency", "amount", "original_amount", "approve_after", "approved_at", "paid_at", "reversed_at",
	"rejected_at", "reason",
}

// commissionReviewRoutes are the brand's review of its program's
// commissions and the program's audit log (issue 24): every member lists,
// owners and admins approve and reject.
func (s *Server) commissionReviewRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("commission_review", limitCommissionReview, byToken)
	s.limitedRoute("GET", "/api/v1/programs/:id/commissions", withStyle(defaultStyle), limit, dashboard, s.listProgramCommissions)
	s.limitedRoute("POST", "/api/v1/programs/:id/commissions/:cid/approve", withStyle(defaultStyle), limit, dashboard, s.approveProgramCommission)
	s.limitedRoute("POST", "/api/v1/programs/:id/commissions/:cid/reject", withStyle(defaultStyle), limit, dashboard, s.rejectProgramCommission)
	s.limitedRoute("GET", "/api/v1/programs/:id/audit", withStyle(defaultStyle), limit, dashboard, s.listProgramAudit)
}

// listProgramCommissions is GET /api/v1/programs/:id/commissions (any
// member): a page of the program's commissions, newest first, filtered by
// status, partner_id and created_at (dateFrom, dateTo); ?format=csv
// streams every matching commission as CSV.
func (s *Server) listProgramCommissions(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoCommissionsRead)
	if err != nil {
		return err
	}
	q, err := ledger.CommissionQueryInput{
		Page:      queryInt(c, "page"),
		PageSize:  queryInt(c, "pageSize"),
		Status:    queryString(c, "status"),
		PartnerID: queryInt(c, "partner_id"),
		DateFrom:  queryString(c, "dateFrom"),
		DateTo:    queryString(c, "dateTo"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	asCSV, err := wantsCSV(c, ledger.MsgCommissionFormat)
	if err != nil {
		return err
	}
	if asCSV {
		return s.exportProgramCommissions(c, q)
	}
	page, err := s.svc.CommissionReview.Commissions(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Commissions))
	for i := range page.Commissions {
		data[i] = reviewedCommissionJSON(&page.Commissions[i])
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// approveProgramCommission is POST …/commissions/:cid/approve (owner or
// admin): a pending commission is approved now, before its hold ends.
func (s *Server) approveProgramCommission(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgCommissionsAdminOnly)
	if err != nil {
		return err
	}
	id, err := pathID(c, "cid", "commission")
	if err != nil {
		return err
	}
	r, err := s.svc.CommissionReview.ApproveCommission(c.UserContext(), programID, id, sessionOf(c).UserID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, reviewedCommissionJSON(r))
}

// rejectProgramCommission is POST …/commissions/:cid/reject (owner or
// admin) with a reason: a pending commission is rejected, an approved one
// reversed (ledger.PlanRejection).
func (s *Server) rejectProgramCommission(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, msgCommissionsAdminOnly)
	if err != nil {
		return err
	}
	id, f, err := pathIDAndFields(c, "cid", "commission")
	if err != nil {
		return err
	}
	reason, err := ledger.ParseRejectReason(f.String("reason"))
	if err != nil {
		return err
	}
	r, err := s.svc.CommissionReview.RejectCommission(c.UserContext(), programID, id, sessionOf(c).UserID, reason)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, reviewedCommissionJSON(r))
}

// listProgramAudit is GET /api/v1/programs/:id/audit (any member): a page
// of the program's audit log, newest first, filtered by action and
// subject_type.
func (s *Server) listProgramAudit(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, msgNoAuditRead)
	if err != nil {
		return err
	}
	q, err := ledger.AuditQueryInput{
		Page:        queryInt(c, "page"),
		PageSize:    queryInt(c, "pageSize"),
		Action:      queryString(c, "action"),
		SubjectType: queryString(c, "subject_type"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	page, err := s.svc.CommissionReview.Audit(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Entries))
	for i := range page.Entries {
		data[i] = auditEntryJSON(&page.Entries[i])
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// exportProgramCommissions streams every commission q matches as CSV,
// newest first (streamCSV).
func (s *Server) exportProgramCommissions(c *fiber.Ctx, q ledger.CommissionQuery) error {
	return streamCSV(s, c, csvExport[ledger.ReviewedCommission]{
		what: "commission", programID: q.ProgramID, header: commissionCSVHeader, row: commissionCSVRow, batch: ledger.CommissionExportBatch,
		next: func(ctx context.Context, after *ledger.ReviewedCommission) ([]ledger.ReviewedCommission, error) {
			return s.svc.CommissionReview.CommissionBatch(ctx, q, after)
		},
	})
}

// commissionCSVRow is a commission's CSV record, in commissionCSVHeader's
// order. The cells people or other systems wrote (the partner's name and
// email, the brand's transaction id, the reason) are made safe for
// spreadsheets (csvText).
func commissionCSVRow(r *ledger.ReviewedCommission) []string {
	at := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return formatTime(*t)
	}
	return []string{
		strconv.FormatInt(r.ID, 10),
		formatTime(r.CreatedAt),
		r.Status,
		strconv.FormatInt(r.PartnerID, 10),
		csvText(r.PartnerName),
		csvText(r.PartnerEmail),
		strconv.FormatInt(r.SaleID, 10),
		csvText(r.TransactionID),
		string(r.Currency),
		ledger.MinorToMajor(r.AmountMinor, r.Currency).String(),
		ledger.MinorToMajor(r.OriginalMinor, r.Currency).String(),
		formatTime(r.ApproveAfter),
		at(r.ApprovedAt),
		at(r.PaidAt),
		at(r.ReversedAt),
		at(r.RejectedAt),
		csvText(r.Reason),
	}
}

// reviewedCommissionJSON renders a commission as the brand reviews it:
// money in major units as exact decimals; never the customer.
func reviewedCommissionJSON(r *ledger.ReviewedCommission) fiber.Map {
	var reason any
	if r.Reason != "" {
		reason = r.Reason
	}
	return fiber.Map{
		"id":              r.ID,
		"program_id":      r.ProgramID,
		"partner":         fiber.Map{"id": r.PartnerID, "name": r.PartnerName, "email": r.PartnerEmail},
		"sale_id":         r.SaleID,
		"transaction_id":  r.TransactionID,
		"amount":          moneyJSON(r.AmountMinor, r.Currency),
		"original_amount": moneyJSON(r.OriginalMinor, r.Currency),
		"currency":        string(r.Currency),
		"status":          r.Status,
		"reason":          reason,
		"approve_after":   formatTime(r.ApproveAfter),
		"approved_at":     optionalTime(r.ApprovedAt),
		"paid_at":         optionalTime(r.PaidAt),
		"reversed_at":     optionalTime(r.ReversedAt),
		"rejected_at":     optionalTime(r.RejectedAt),
		"created_at":      formatTime(r.CreatedAt),
	}
}

// auditEntryJSON renders an audit row; actor is null for the system.
func auditEntryJSON(e *ledger.AuditEntry) fiber.Map {
	var actor, subject any
	if e.ActorUserID != 0 {
		var email any
		if e.ActorEmail != "" {
			email = e.ActorEmail
		}
		actor = fiber.Map{"user_id": e.ActorUserID, "email": email}
	}
	if e.SubjectID != 0 {
		subject = e.SubjectID
	}
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	return fiber.Map{
		"id":           e.ID,
		"actor":        actor,
		"action":       e.Action,
		"subject_type": e.SubjectType,
		"subject_id":   subject,
		"details":      details,
		"created_at":   formatTime(e.CreatedAt),
	}
}
