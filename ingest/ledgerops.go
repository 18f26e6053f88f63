package ingest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The operator API of the commission ledger: commissions, balances,
// withdrawals and partners' in-app notifications.

// notificationsLimit is how many notifications a listing returns.
const notificationsLimit = 100

// moneyJSON renders minor units as an exact JSON number in major units
// (1250 USD cents is 12.5).
func moneyJSON(minor int64, c ledger.Currency) json.Number {
	return decimalJSON(ledger.MinorToMajor(minor, c).String())
}

// optionalTime renders a time that may be unset.
func optionalTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return formatTime(*t)
}

func commissionJSON(c *ledger.Commission) fiber.Map {
	var reason any
	if c.Reason != "" {
		reason = c.Reason
	}
	return fiber.Map{
		"id":              c.ID,
		"status":          c.Status,
		"amount":          moneyJSON(c.AmountMinor, c.Currency),
		"original_amount": moneyJSON(c.OriginalMinor, c.Currency),
		"currency":        string(c.Currency),
		"reason":          reason,
		"partner_id":      c.PartnerID,
		"program_id":      c.ProgramID,
		"sale_id":         c.SaleID,
		"transaction_id":  c.TransactionID,
		"credited":        c.Credited,
		"approve_after":   formatTime(c.ApproveAfter),
		"approved_at":     optionalTime(c.ApprovedAt),
		"paid_at":         optionalTime(c.PaidAt),
		"reversed_at":     optionalTime(c.ReversedAt),
		"withdrawal_id":   c.WithdrawalID,
		"created_at":      formatTime(c.CreatedAt),
	}
}

func withdrawalJSON(w *ledger.Withdrawal) fiber.Map {
	return fiber.Map{
		"id":               w.ID,
		"partner_id":       w.PartnerID,
		"currency":         string(w.Currency),
		"amount":           moneyJSON(w.AmountMinor, w.Currency),
		"requested_amount": moneyJSON(w.RequestedMinor, w.Currency),
		"status":           w.Status,
		"created_at":       formatTime(w.CreatedAt),
		"paid_at":          optionalTime(w.PaidAt),
	}
}

func (s *Server) opCommission(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "commission")
	if err != nil {
		return err
	}
	cm, err := s.svc.Commissions.Commission(c.UserContext(), id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, commissionJSON(cm))
}

func (s *Server) opApproveCommission(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "commission")
	if err != nil {
		return err
	}
	cm, err := s.svc.Commissions.ApproveCommission(c.UserContext(), id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, commissionJSON(cm))
}

func (s *Server) opMarkCommissionPaid(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "commission")
	if err != nil {
		return err
	}
	cm, err := s.svc.Commissions.MarkCommissionPaid(c.UserContext(), id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, commissionJSON(cm))
}

func (s *Server) opBalances(c *fiber.Ctx) error {
	partnerID, err := pathID(c, "id", "partner")
	if err != nil {
		return err
	}
	balances, err := s.svc.Balances.Balances(c.UserContext(), partnerID)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(balances))
	for _, b := range balances {
		out = append(out, fiber.Map{"currency": string(b.Currency), "amount": moneyJSON(b.AmountMinor, b.Currency)})
	}
	return ok(c, fiber.StatusOK, out)
}

func (s *Server) opCreateWithdrawal(c *fiber.Ctx) error {
	partnerID, f, err := pathIDAndFields(c, "id", "partner")
	if err != nil {
		return err
	}
	curIn, amountIn := f.String("currency"), f.Decimal("amount")
	cur, valid := ledger.ParseCurrency(strings.ToUpper(curIn.Value))
	if !curIn.OK() || !valid {
		return invalid(ledger.MsgWithdrawalCurrency)
	}
	if !amountIn.OK() {
		return invalid(ledger.MsgWithdrawalAmount)
	}
	minor, err := ledger.WithdrawalAmount(amountIn.Value, cur)
	if err != nil {
		return err
	}
	w, err := s.svc.Balances.CreateWithdrawal(c.UserContext(), partnerID, cur, minor)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, withdrawalJSON(w))
}

func (s *Server) opWithdrawal(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "withdrawal")
	if err != nil {
		return err
	}
	w, err := s.svc.Balances.Withdrawal(c.UserContext(), id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, withdrawalJSON(w))
}

func (s *Server) opMarkWithdrawalPaid(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "withdrawal")
	if err != nil {
		return err
	}
	w, err := s.svc.Balances.MarkWithdrawalPaid(c.UserContext(), id)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, withdrawalJSON(w))
}

func (s *Server) opPartnerNotifications(c *fiber.Ctx) error {
	partnerID, err := pathID(c, "id", "partner")
	if err != nil {
		return err
	}
	list, err := s.svc.Notifications.PartnerNotifications(c.UserContext(), partnerID, notificationsLimit)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, notificationsJSON(list))
}
