package ingest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The operator API provisions the world the spec assumes exists:
// workspaces, users, programs, partners, links, key rotation marks,
// processor accounts and agent keys.

func invalid(msg string) error { return ledger.NewError(ledger.EInvalid, msg) }

func (s *Server) opCreateWorkspace(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	name, email := f.String("name"), f.String("owner_email")
	if !name.OK() {
		return invalid(ledger.MsgWorkspaceName)
	}
	if !email.OK() {
		return invalid(ledger.MsgEmail)
	}
	ws, err := s.svc.Accounts.CreateWorkspace(c.UserContext(), name.Value, email.Value)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"id": ws.ID, "name": ws.Name, "owner_user_id": ws.OwnerUserID})
}

func (s *Server) opAddMember(c *fiber.Ctx) error {
	wsID, f, err := pathIDAndFields(c, "id", "workspace")
	if err != nil {
		return err
	}
	email, role := f.String("email"), f.String("role")
	if !email.OK() {
		return invalid(ledger.MsgEmail)
	}
	r, valid := ledger.ParseRole(role.Value)
	if !role.OK() || !valid {
		return invalid(ledger.MsgRole)
	}
	userID, err := s.svc.Accounts.AddMember(c.UserContext(), wsID, email.Value, r)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"user_id": userID, "workspace_id": wsID, "role": string(r)})
}

func (s *Server) opCreateSession(c *fiber.Ctx) error {
	userID, err := pathID(c, "id", "user")
	if err != nil {
		return err
	}
	sess, err := s.svc.Accounts.CreateSession(c.UserContext(), userID, ledger.DashboardSession)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"token": sess.Token, "expires_at": formatTime(sess.ExpiresAt)})
}

func (s *Server) opSuspendUser(c *fiber.Ctx) error {
	userID, err := pathID(c, "id", "user")
	if err != nil {
		return err
	}
	u, err := s.svc.Accounts.SuspendUser(c.UserContext(), userID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"id": u.ID, "email": u.Email, "suspended_at": formatTime(*u.SuspendedAt)})
}

// opUnlinkIdentity is POST /users/:id/unlink-identity: the user's binding
// to a provider identity is removed, so that their next sign-in binds
// anew (a person whose provider account changed).
func (s *Server) opUnlinkIdentity(c *fiber.Ctx) error {
	userID, err := pathID(c, "id", "user")
	if err != nil {
		return err
	}
	u, err := s.svc.Accounts.UnlinkIdentity(c.UserContext(), userID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"id": u.ID, "email": u.Email, "unlinked": true})
}

const msgWorkspaceID = "workspace_id is required and must be an integer"

func (s *Server) opCreateProgram(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	wsID := f.Int("workspace_id")
	if !wsID.OK() {
		return invalid(msgWorkspaceID)
	}
	p, err := s.svc.Programs.CreateProgram(c.UserContext(), wsID.Value, programInput(f))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, programJSON(p))
}

func (s *Server) opEnrollPartner(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "id", "program")
	if err != nil {
		return err
	}
	email, name := f.String("email"), f.String("name")
	if !email.OK() {
		return invalid(ledger.MsgEmail)
	}
	if !name.OK() {
		return invalid(ledger.MsgPartnerName)
	}
	p, err := s.svc.Partners.EnrollPartner(c.UserContext(), programID, email.Value, name.Value)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"id": p.ID, "email": p.Email, "name": p.Name, "program_id": programID})
}

func (s *Server) opCreateLink(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "id", "program")
	if err != nil {
		return err
	}
	partnerID, code, active := f.Int("partner_id"), f.String("code"), f.Bool("active")
	if !partnerID.OK() {
		return invalid(ledger.MsgPartnerID)
	}
	if !code.OK() {
		return invalid(ledger.MsgLinkCode)
	}
	if active.Bad {
		return invalid(ledger.MsgLinkActive)
	}
	l, err := s.svc.Partners.CreateLink(c.UserContext(), programID, partnerID.Value, code.Value, active.Or(true))
	if err != nil {
		return err
	}
	s.invalidateLink(c, l.Code) // an edge may remember the code as unknown
	return ok(c, fiber.StatusCreated, linkJSON(l))
}

func (s *Server) opPatchLink(c *fiber.Ctx) error {
	linkID, f, err := pathIDAndFields(c, "id", "link")
	if err != nil {
		return err
	}
	active := f.Bool("active")
	if !active.OK() {
		return invalid(ledger.MsgLinkActive)
	}
	l, err := s.svc.Partners.SetLinkActive(c.UserContext(), linkID, active.Value)
	if err != nil {
		return err
	}
	s.invalidateLink(c, l.Code)
	return ok(c, fiber.StatusOK, linkJSON(l))
}

// invalidateLink drops a changed link from every edge's cache. The change
// has committed, so a failure is only logged: other instances then serve
// the old link until their entry expires.
func (s *Server) invalidateLink(c *fiber.Ctx, code string) {
	if s.svc.TrackingCache == nil {
		return
	}
	if err := s.svc.TrackingCache.InvalidateLink(c.UserContext(), code); err != nil {
		s.logger.Warn("link cache invalidation not published", "request_id", requestID(c), "err", err)
	}
}

func (s *Server) opMarkKeyRotation(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "id", "program")
	if err != nil {
		return err
	}
	raw := f.String("deadline")
	// Any ISO 8601 date or date-time the listing reads; a date is its
	// midnight UTC.
	deadline, parsed := ledger.ParseEventTime(raw.Value, false)
	if !raw.OK() || !parsed {
		return invalid(ledger.MsgRotationDeadline)
	}
	r, err := s.svc.Keys.MarkKeyRotation(c.UserContext(), programID, deadline)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"program_id": programID, "marked_at": formatTime(r.MarkedAt), "deadline": formatTime(r.Deadline)})
}

func (s *Server) opConnectProcessor(c *fiber.Ctx) error {
	programID, f, err := pathIDAndFields(c, "id", "program")
	if err != nil {
		return err
	}
	acct := f.String("account_id")
	if !acct.OK() {
		return invalid(ledger.MsgProcessorAcct)
	}
	a, err := s.svc.Partners.ConnectProcessorAccount(c.UserContext(), programID, acct.Value)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"program_id": a.ProgramID, "account_id": a.AccountID})
}

func (s *Server) opCreateAgentKey(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	wsID, scopes := f.Int("workspace_id"), f.Strings("scopes")
	if !wsID.OK() {
		return invalid(msgWorkspaceID)
	}
	if !scopes.OK() {
		return invalid(ledger.MsgScopes)
	}
	k, err := s.svc.Partners.CreateAgentKey(c.UserContext(), wsID.Value, scopes.Value)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"id": k.ID, "key": k.Key, "workspace_id": k.WorkspaceID, "scopes": k.Scopes})
}

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
