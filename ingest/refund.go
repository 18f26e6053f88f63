package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// trackRefund is POST /api/v1/track/refund. A call with the program's
// test key answers success before its body is read: nothing is refunded.
func (s *Server) trackRefund(c *fiber.Ctx) error {
	key := programKeyOf(c)
	if key.IsTest() {
		return c.JSON(fiber.Map{"success": true, "test": true})
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	in, err := ledger.RefundRequest{
		ProgramID:         key.ProgramID,
		TransactionID:     f.String("transaction_id"),
		RefundAmountCents: f.Int("refund_amount_cents"),
		RefundID:          f.String("refund_id"),
		Reason:            f.String("reason"),
		RefundReason:      f.String("refund_reason"),
	}.Validate()
	if err != nil {
		return err
	}
	res, err := s.svc.Refunds.ApplyRefund(c.UserContext(), in)
	if err != nil {
		return err
	}
	return c.JSON(refundBody(res))
}

// refundBody renders a refund's outcome at the top level, as the spec
// shows it.
func refundBody(r *ledger.RefundResult) fiber.Map {
	switch r.Status {
	case ledger.RefundSkipped:
		return fiber.Map{"success": true, "status": r.Status, "reason": r.SkipReason, "commission_id": r.CommissionID}
	case ledger.RefundNoCommission:
		return fiber.Map{"success": true, "status": r.Status, "message": r.Message}
	}
	return fiber.Map{"success": true, "status": r.Status,
		"deductionAmount": moneyJSON(r.DeductionMinor, r.Currency), "commission_id": r.CommissionID}
}
