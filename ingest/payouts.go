package ingest

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// limitPayouts is the rate limit of the brand's payout routes: 120
// requests a minute per dashboard token, one bucket ("payouts").
const limitPayouts = 120

// partnerPayoutsLimit bounds GET /api/v1/partner/payouts: the newest 500.
const partnerPayoutsLimit = 500

// payoutCSVHeader names the payout export's columns, in order: the five a
// PayPal mass payout upload reads (recipient email, amount, currency,
// unique id, note), then the bank transfer columns and the payout's own.
var payoutCSVHeader = []string{
	"recipient_email", "amount", "currency", "unique_id", "note",
	"method", "account_holder", "iban", "account_number", "swift_bic", "bank_name", "country",
	"payout_id", "partner_id", "partner_name", "status", "requested_by", "created_at",
}

// payoutRoutes are the brand's payouts of its program (dashboard session:
// every member reads, owners and admins change) and the partner's payouts
// and payout method (partner session).
func (s *Server) payoutRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	limit := s.rateLimit("payouts", limitPayouts, byToken)
	s.limitedRoute("GET", "/api/v1/programs/:id/payouts", withStyle(defaultStyle), limit, dashboard, s.listProgramPayouts)
	s.limitedRoute("GET", "/api/v1/programs/:id/payouts/due", withStyle(defaultStyle), limit, dashboard, s.listDuePayouts)
	s.limitedRoute("POST", "/api/v1/programs/:id/payouts", withStyle(defaultStyle), limit, dashboard, s.createProgramPayouts)
	for _, next := range []string{ledger.PayoutProcessing, ledger.PayoutPaid, ledger.PayoutFailed} {
		s.limitedRoute("POST", "/api/v1/programs/:id/payouts/:payoutId/mark-"+next, withStyle(defaultStyle), limit, dashboard, s.markPayout(next))
	}
	// The partner's routes share the partner API's bucket.
	partner := s.rateLimit("partner_portal", limitPartnerPortal, byToken)
	s.limitedRoute("GET", "/api/v1/partner/payouts", withStyle(defaultStyle), partner, s.requirePartner, s.listPartnerPayouts)
	s.limitedRoute("POST", "/api/v1/partner/programs/:programId/payouts", withStyle(defaultStyle), partner, s.requirePartner, s.requestPartnerPayout)
	s.limitedRoute("GET", "/api/v1/partner/payout-method", withStyle(defaultStyle), partner, s.requirePartner, s.getPayoutMethod)
	s.limitedRoute("PUT", "/api/v1/partner/payout-method", withStyle(defaultStyle), partner, s.requirePartner, s.putPayoutMethod)
	s.limitedRoute("DELETE", "/api/v1/partner/payout-method", withStyle(defaultStyle), partner, s.requirePartner, s.deletePayoutMethod)
}

// listProgramPayouts is GET /api/v1/programs/:id/payouts (any member; the
// CSV, which holds the partners' unsealed payout details, owners and
// admins only): a page of the program's payouts, newest first, filtered
// by status and partner_id.
func (s *Server) listProgramPayouts(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, ledger.MsgNoPayoutsRead)
	if err != nil {
		return err
	}
	q, err := ledger.PayoutQueryInput{
		Page:      queryInt(c, "page"),
		PageSize:  queryInt(c, "pageSize"),
		Status:    queryString(c, "status"),
		PartnerID: queryInt(c, "partner_id"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	asCSV, err := wantsCSV(c, ledger.MsgPayoutFormat)
	if err != nil {
		return err
	}
	if asCSV {
		if _, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, ledger.MsgPayoutCSVAdminOnly); err != nil {
			return err
		}
		return streamCSV(s, c, csvExport[ledger.Payout]{
			what: "payout", programID: programID, header: payoutCSVHeader, row: payoutCSVRow, batch: ledger.PayoutExportBatch,
			next: func(ctx context.Context, after *ledger.Payout) ([]ledger.Payout, error) {
				return s.svc.Payouts.PayoutBatch(ctx, q, after)
			},
		})
	}
	page, err := s.svc.Payouts.Payouts(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Payouts))
	for i := range page.Payouts {
		data[i] = brandPayoutJSON(&page.Payouts[i])
	}
	return renderPage(c, data, page.Page, page.PageSize, page.PageCount(), page.Total)
}

// listDuePayouts is GET /api/v1/programs/:id/payouts/due (any member).
func (s *Server) listDuePayouts(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersRead, ledger.MsgNoPayoutsRead)
	if err != nil {
		return err
	}
	due, err := s.svc.Payouts.DuePayouts(c.UserContext(), programID)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(due))
	for i, d := range due {
		var method any
		if d.MethodOnFile {
			method = fiber.Map{"method": d.Method, "details": d.Masked}
		}
		data[i] = fiber.Map{
			"partner":        fiber.Map{"id": d.PartnerID, "name": d.PartnerName, "email": d.PartnerEmail},
			"amount":         moneyJSON(d.AmountMinor, d.Currency),
			"currency":       string(d.Currency),
			"method_on_file": d.MethodOnFile,
			"payout_method":  method,
		}
	}
	return ok(c, fiber.StatusOK, data)
}

// createProgramPayouts is POST /api/v1/programs/:id/payouts (owner or
// admin), body optional partner_ids: a payout for each due partner, or
// for each one named with a due balance.
func (s *Server) createProgramPayouts(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, ledger.MsgPayoutsAdminOnly)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	// The ledger checks the ids (at most 500, each positive).
	ids := f.Int64s("partner_ids")
	if ids.Bad {
		return invalid(ledger.MsgPayoutPartnerIDs)
	}
	run, err := s.svc.Payouts.CreatePayouts(c.UserContext(), programID, ids.Value, sessionOf(c).UserID)
	if err != nil {
		return err
	}
	created := make([]fiber.Map, len(run.Created))
	for i := range run.Created {
		created[i] = brandPayoutJSON(&run.Created[i])
	}
	skipped := make([]fiber.Map, len(run.Skipped))
	for i, sk := range run.Skipped {
		skipped[i] = fiber.Map{"partner_id": sk.PartnerID, "reason": sk.Reason}
	}
	return ok(c, fiber.StatusOK, fiber.Map{"created": created, "skipped": skipped})
}

// markPayout is POST …/payouts/:payoutId/mark-<next> (owner or admin):
// mark-paid reads external_reference, mark-failed reason.
func (s *Server) markPayout(next string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		programID, err := s.programWithPermission(c, "id", ledger.PermPartnersWrite, ledger.MsgPayoutsAdminOnly)
		if err != nil {
			return err
		}
		id, f, err := pathIDAndFields(c, "payoutId", "payout")
		if err != nil {
			return err
		}
		var text string
		switch next {
		case ledger.PayoutPaid:
			text, err = ledger.ParseExternalReference(f.String("external_reference"))
		case ledger.PayoutFailed:
			text, err = ledger.ParseFailureReason(f.String("reason"))
		}
		if err != nil {
			return err
		}
		p, err := s.svc.Payouts.MarkPayout(c.UserContext(), programID, id, next, text, sessionOf(c).UserID)
		if err != nil {
			return err
		}
		return ok(c, fiber.StatusOK, brandPayoutJSON(p))
	}
}

// listPartnerPayouts is GET /api/v1/partner/payouts: the signed-in
// partner's payouts in every program, newest first.
func (s *Server) listPartnerPayouts(c *fiber.Ctx) error {
	payouts, err := s.svc.Payouts.PartnerPayouts(c.UserContext(), partnerOf(c).PartnerID, partnerPayoutsLimit)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(payouts))
	for i := range payouts {
		data[i] = payoutJSON(&payouts[i])
	}
	return ok(c, fiber.StatusOK, data)
}

// requestPartnerPayout is POST /api/v1/partner/programs/:programId/payouts:
// the partner asks to be paid (amount optional, default the whole
// approved balance; currency optional, default the program's).
func (s *Server) requestPartnerPayout(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "programId", "program")
	if err != nil {
		return err
	}
	r := ledger.PayoutRequest{PartnerID: partnerOf(c).PartnerID, ProgramID: programID}
	if in := f.Decimal("amount"); in.Present {
		if in.Bad {
			return invalid(ledger.MsgPayoutAmount)
		}
		r.Amount = &in.Value
	}
	if in := f.String("currency"); in.Present {
		cur, known := ledger.ParseCurrency(in.Value)
		if in.Bad || !known {
			return invalid(ledger.MsgPayoutCurrency)
		}
		r.Currency = &cur
	}
	p, err := s.svc.Payouts.RequestPayout(c.UserContext(), r)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, payoutJSON(p))
}

// getPayoutMethod is GET /api/v1/partner/payout-method: masked.
func (s *Server) getPayoutMethod(c *fiber.Ctx) error {
	m, err := s.svc.Payouts.PayoutMethod(c.UserContext(), partnerOf(c).PartnerID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, payoutMethodJSON(m))
}

// putPayoutMethod is PUT /api/v1/partner/payout-method: method and details
// (an object of strings), checked for shape, stored sealed; the answer is
// the masked copy.
func (s *Server) putPayoutMethod(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	method := f.String("method")
	if !method.OK() {
		return invalid(ledger.MsgPayoutMethod)
	}
	obj := f.Object("details")
	if !obj.OK() {
		return invalid(ledger.MsgPayoutDetails)
	}
	details := map[string]string{}
	for k := range obj.Value {
		v := obj.Value.String(k)
		if !v.OK() {
			return ledger.PayoutDetailsError(k, ledger.MsgPayoutDetailNotString)
		}
		details[k] = v.Value
	}
	in, err := ledger.ValidatePayoutMethod(method.Value, details)
	if err != nil {
		return err
	}
	m, err := s.svc.Payouts.SetPayoutMethod(c.UserContext(), partnerOf(c).PartnerID, in)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, payoutMethodJSON(m))
}

// deletePayoutMethod is DELETE /api/v1/partner/payout-method.
func (s *Server) deletePayoutMethod(c *fiber.Ctx) error {
	if err := s.svc.Payouts.DeletePayoutMethod(c.UserContext(), partnerOf(c).PartnerID); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"deleted": true})
}

func payoutMethodJSON(m *ledger.PayoutMethod) fiber.Map {
	return fiber.Map{
		"method":     m.Method,
		"details":    m.Masked,
		"created_at": formatTime(m.CreatedAt),
		"updated_at": formatTime(m.UpdatedAt),
	}
}

// payoutJSON renders what brand and partner both see of a payout: money
// in major units, exact; the clawback and its warnings.
func payoutJSON(p *ledger.Payout) fiber.Map {
	return fiber.Map{
		"id":                 p.ID,
		"program":            fiber.Map{"id": p.ProgramID, "name": p.ProgramName},
		"amount":             moneyJSON(p.AmountMinor, p.Currency),
		"currency":           string(p.Currency),
		"status":             p.Status,
		"requested_by":       p.RequestedBy,
		"external_reference": nullString(p.ExternalReference),
		"failure_reason":     nullString(p.FailureReason),
		"clawback":           moneyJSON(p.ClawbackMinor, p.Currency),
		"warnings":           ledger.PayoutWarnings(p),
		"created_at":         formatTime(p.CreatedAt),
		"processing_at":      optionalTime(p.ProcessingAt),
		"paid_at":            optionalTime(p.PaidAt),
		"failed_at":          optionalTime(p.FailedAt),
	}
}

// brandPayoutJSON is a payout as the brand sees it: with its partner.
func brandPayoutJSON(p *ledger.Payout) fiber.Map {
	m := payoutJSON(p)
	m["partner"] = fiber.Map{"id": p.PartnerID, "name": p.PartnerName, "email": p.PartnerEmail}
	return m
}

// payoutCSVRow is a payout's CSV record in payoutCSVHeader's order. The
// recipient email is the PayPal or Wise email on file, else the
// partner's own; the unique id is "payout-<id>". Cells people typed are
// made safe for spreadsheets (csvText).
func payoutCSVRow(p *ledger.Payout) []string {
	d := map[string]string{}
	method := ""
	if p.Method != nil {
		d, method = p.Method.Details, p.Method.Method
	}
	recipient := p.PartnerEmail
	if e := d["email"]; e != "" {
		recipient = e
	}
	note := p.ProgramName + " payout #" + strconv.FormatInt(p.ID, 10)
	return []string{
		csvText(recipient),
		ledger.MinorToMajor(p.AmountMinor, p.Currency).StringFixed(p.Currency.Exponent()),
		string(p.Currency),
		"payout-" + strconv.FormatInt(p.ID, 10),
		csvText(note),
		method,
		csvText(d["account_holder"]),
		csvText(d["iban"]),
		csvText(d["account_number"]),
		csvText(d["swift_bic"]),
		csvText(d["bank_name"]),
		csvText(d["country"]),
		strconv.FormatInt(p.ID, 10),
		strconv.FormatInt(p.PartnerID, 10),
		csvText(p.PartnerName),
		p.Status,
		p.RequestedBy,
		formatTime(p.CreatedAt),
	}
}
