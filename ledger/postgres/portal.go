package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// PortalService implements ledger.PortalService: the partner portal's
// reads and changes, each scoped to one partner (or its email). Invites
// are accepted through the intake service's one write path.
type PortalService struct {
	db     *DB
	intake *IntakeService
	now    func() time.Time
}

// NewPortalService returns the partner portal's service over db; intake
// accepts invites (and relays their outbox messages); now fixes the
// programs' today for the stats (nil: time.Now).
func NewPortalService(db *DB, intake *IntakeService, now func() time.Time) *PortalService {
	if now == nil {
		now = time.Now
	}
	return &PortalService{db: db, intake: intake, now: now}
}

var _ ledger.PortalService = (*PortalService)(nil)

// PartnerPrograms lists the partner's enrollments, newest first, with the
// terms of its group: the group's current policy, or the program's own
// terms for the default group.
func (s *PortalService) PartnerPrograms(ctx context.Context, partnerID int64) (out []ledger.PartnerProgram, err error) {
	defer wrap(&err, "postgres.PartnerPrograms(%d)", partnerID)
	rows, err := s.db.QueryContext(ctx, `
		SELECT pr.id, pr.name, pr.slug, pr.domain, pr.currency, e.status, g.id, g.name,
			COALESCE(cp.commission_type, pr.commission_type), COALESCE(cp.commission_rate, pr.commission_rate),
			COALESCE(cp.duration_months, pr.duration_months), COALESCE(cp.hold_days, pr.hold_days),
			pr.cookie_duration, pr.partner_links, e.created_at
		FROM enrollments e
		JOIN programs pr ON pr.id = e.program_id
		JOIN partner_groups g ON g.id = e.group_id
		LEFT JOIN commission_policies cp ON cp.id = g.policy_id
		WHERE e.partner_id = $1
		ORDER BY e.created_at DESC, pr.id DESC`, partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.PartnerProgram{}
	for rows.Next() {
		var p ledger.PartnerProgram
		var currency, ctype string
		if err := rows.Scan(&p.ProgramID, &p.Name, &p.Slug, &p.Domain, &currency, &p.Status, &p.GroupID, &p.GroupName,
			&ctype, &p.Terms.CommissionRate, &p.Terms.DurationMonths, &p.Terms.HoldDays,
			&p.Terms.CookieDuration, &p.PartnerLinks, &p.JoinedAt); err != nil {
			return nil, err
		}
		p.Currency = ledger.Currency(currency)
		p.Terms.CommissionType, p.Terms.Currency = ledger.CommissionType(ctype), p.Currency
		p.Terms.Name, p.Terms.Slug, p.Terms.Domain = p.Name, p.Slug, p.Domain
		p.JoinedAt = p.JoinedAt.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// PartnerInvites lists the pending, unexpired invites to email, newest
// first, with their program and group.
func (s *PortalService) PartnerInvites(ctx context.Context, emailIn string) (out []ledger.PartnerInvite, err error) {
	defer wrap(&err, "postgres.PartnerInvites")
	out = []ledger.PartnerInvite{}
	email, ok := ledger.NormalizeEmail(emailIn)
	if !ok {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT i.id, pr.id, pr.name, pr.slug, COALESCE(g.name, dg.name, ''), COALESCE(i.message, ''), i.expires_at
		FROM partner_invites i
		JOIN programs pr ON pr.id = i.program_id
		LEFT JOIN partner_groups g ON g.id = i.group_id
		LEFT JOIN partner_groups dg ON dg.program_id = i.program_id AND dg.is_default
		WHERE i.email = $1 AND i.status = 'pending' AND i.expires_at > $2
		ORDER BY i.id DESC`, email, s.db.now())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var i ledger.PartnerInvite
		if err := rows.Scan(&i.ID, &i.ProgramID, &i.ProgramName, &i.ProgramSlug, &i.GroupName, &i.Message, &i.ExpiresAt); err != nil {
			return nil, err
		}
		i.ExpiresAt = i.ExpiresAt.UTC()
		out = append(out, i)
	}
	return out, rows.Err()
}

// AcceptInviteByID accepts an invite to email by its id, through the
// intake service's accept path (the same checks, enrollment, webhook and
// audit as an accept by the email's token).
func (s *PortalService) AcceptInviteByID(ctx context.Context, inviteID int64, email, name string) (en *ledger.Enrollment, err error) {
	defer wrap(&err, "postgres.AcceptInviteByID(%d)", inviteID)
	return s.intake.acceptInvite(ctx, email, name, func(tx *sqlx.Tx) (*ledger.Invite, error) {
		return scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM partner_invites
			WHERE id = $1 FOR UPDATE`, inviteID))
	})
}

// DeclineInvite declines a pending, unexpired invite to email and writes
// the program's audit row (actor: the system, as an acceptance).
func (s *PortalService) DeclineInvite(ctx context.Context, inviteID int64, emailIn string) (inv *ledger.Invite, err error) {
	defer wrap(&err, "postgres.DeclineInvite(%d)", inviteID)
	email, ok := ledger.NormalizeEmail(emailIn)
	if !ok {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		cur, err := scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM partner_invites
			WHERE id = $1 FOR UPDATE`, inviteID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && cur.Email != email) {
			return ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
		} else if err != nil {
			return err
		}
		if cur.Status != ledger.InvitePending {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteDeclineState)
		}
		if cur.StatusAt(now) == ledger.InviteExpired {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteExpired)
		}
		inv, err = scanInvite(tx.QueryRowContext(ctx, `
			UPDATE partner_invites SET status = 'declined', declined_at = $2, updated_at = $2
			WHERE id = $1 RETURNING `+inviteColumns, inviteID, now))
		if err != nil {
			return err
		}
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: inv.ProgramID, Action: "invite.declined",
			SubjectType: "invite", SubjectID: inv.ID, Details: map[string]any{"email": inv.Email}}, now)
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// enrollmentOf reads the partner's enrollment status in a program and the
// program's partner_links; a program the partner is not enrolled in is
// ENotFound, whether or not it exists.
func enrollmentOf(ctx context.Context, q sqlx.QueryerContext, partnerID, programID int64, lock bool) (status string, partnerLinks bool, err error) {
	query := `SELECT e.status, pr.partner_links FROM enrollments e JOIN programs pr ON pr.id = e.program_id
		WHERE e.partner_id = $1 AND e.program_id = $2`
	if lock {
		query += ` FOR SHARE OF e`
	}
	err = q.QueryRowxContext(ctx, query, partnerID, programID).Scan(&status, &partnerLinks)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, ledger.NewError(ledger.ENotFound, ledger.MsgPortalProgramNotFound)
	}
	return status, partnerLinks, err
}

// PartnerLinks lists the partner's normal links in a program it is
// enrolled in, newest first, with their landing URL and recorded clicks
// (the brand listing's columns).
func (s *PortalService) PartnerLinks(ctx context.Context, partnerID, programID int64) (out []ledger.BrandLink, err error) {
	defer wrap(&err, "postgres.PartnerLinks(%d, %d)", partnerID, programID)
	if _, _, err := enrollmentOf(ctx, s.db, partnerID, programID, false); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT `+brandLinkColumns+`
		FROM links l `+brandLinkJoins+`
		WHERE l.program_id = $1 AND l.partner_id = $2 AND NOT l.is_test
		ORDER BY l.id DESC`, programID, partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.BrandLink{}
	for rows.Next() {
		var bl ledger.BrandLink
		if err := rows.Scan(brandLinkDest(&bl)...); err != nil {
			return nil, err
		}
		fixBrandLinkTimes(&bl)
		out = append(out, bl)
	}
	return out, rows.Err()
}

// CreatePartnerLink creates an active link with the partner's own code,
// when the program lets partners make links and the partner is active
// there (ledger.PartnerLinkRule), through the operator's link write.
func (s *PortalService) CreatePartnerLink(ctx context.Context, partnerID, programID int64, code string) (bl *ledger.BrandLink, err error) {
	defer wrap(&err, "postgres.CreatePartnerLink(%d, %d, %q)", partnerID, programID, code)
	if !ledger.ValidLinkCode(code) {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgLinkCode)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		status, partnerLinks, err := enrollmentOf(ctx, tx, partnerID, programID, true)
		if err != nil {
			return err
		}
		if err := ledger.PartnerLinkRule(partnerLinks, status); err != nil {
			return err
		}
		l, err := insertLink(ctx, tx, programID, partnerID, code, true, now)
		if err != nil {
			return err
		}
		bl, err = brandLink(ctx, tx, programID, l.ID)
		return err
	})
	if err != nil {
		return nil, formatError(err)
	}
	return bl, nil
}

// partnerCommissionColumns are a commission as its partner sees it: no
// sale, customer or transaction reference.
const partnerCommissionColumns = `c.id, c.program_id, pr.name, c.status, c.amount_minor, c.currency,
	c.created_at, c.approved_at, c.paid_at, c.payout_id`

// PartnerCommissions returns a page of the partner's commissions, newest
// first, narrowed by program and status, and the number matching.
func (s *PortalService) PartnerCommissions(ctx context.Context, q ledger.PartnerCommissionQuery) (p *ledger.PartnerCommissionPage, err error) {
	defer wrap(&err, "postgres.PartnerCommissions(%d)", q.PartnerID)
	where := []string{"c.partner_id = $1"}
	args := []any{q.PartnerID}
	if q.ProgramID != nil {
		args = append(args, *q.ProgramID)
		where = append(where, "c.program_id = $"+strconv.Itoa(len(args)))
	}
	if q.Status != "" {
		args = append(args, q.Status)
		where = append(where, "c.status = $"+strconv.Itoa(len(args)))
	}
	cond := strings.Join(where, " AND ")
	p = &ledger.PartnerCommissionPage{Commissions: []ledger.PartnerCommission{}, Page: q.Page, PageSize: q.PageSize}
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM commissions c WHERE `+cond, args...).Scan(&p.Total); err != nil {
		return nil, err
	}
	n := len(args)
	rows, err := s.db.QueryContext(ctx, `
		SELECT `+partnerCommissionColumns+`
		FROM commissions c JOIN programs pr ON pr.id = c.program_id
		WHERE `+cond+`
		ORDER BY c.created_at DESC, c.id DESC
		LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, q.PageSize, q.Offset())...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c ledger.PartnerCommission
		var currency string
		if err := rows.Scan(&c.ID, &c.ProgramID, &c.ProgramName, &c.Status, &c.AmountMinor, &currency,
			&c.CreatedAt, &c.ApprovedAt, &c.PaidAt, &c.PayoutID); err != nil {
			return nil, err
		}
		c.Currency = ledger.Currency(currency)
		c.CreatedAt = c.CreatedAt.UTC()
		for _, t := range []*time.Time{c.ApprovedAt, c.PaidAt} {
			if t != nil {
				*t = t.UTC()
			}
		}
		p.Commissions = append(p.Commissions, c)
	}
	return p, rows.Err()
}

// PartnerBalances sums the partner's balance entries per program and
// currency (entries that name no program, an operator withdrawal's, are
// left out) and its pending commissions, for every program it is enrolled
// in (its currency, zeros included) and any other it has money in.
func (s *PortalService) PartnerBalances(ctx context.Context, partnerID int64) (out []ledger.PartnerBalance, err error) {
	defer wrap(&err, "postgres.PartnerBalances(%d)", partnerID)
	rows, err := s.db.QueryContext(ctx, `
		WITH b AS (
			SELECT program_id, currency, sum(amount_minor) AS balance FROM balance_entries
			WHERE partner_id = $1 AND program_id IS NOT NULL GROUP BY program_id, currency
		), p AS (
			SELECT program_id, currency, sum(amount_minor) AS pending FROM commissions
			WHERE partner_id = $1 AND status = 'pending' GROUP BY program_id, currency
		), k AS (
			SELECT program_id, currency FROM b
			UNION SELECT program_id, currency FROM p
			UNION SELECT e.program_id, pr.currency FROM enrollments e JOIN programs pr ON pr.id = e.program_id
				WHERE e.partner_id = $1
		)
		SELECT k.program_id, pr.name, k.currency, COALESCE(b.balance, 0), COALESCE(p.pending, 0)
		FROM k JOIN programs pr ON pr.id = k.program_id
		LEFT JOIN b ON b.program_id = k.program_id AND b.currency = k.currency
		LEFT JOIN p ON p.program_id = k.program_id AND p.currency = k.currency
		ORDER BY k.program_id, k.currency`, partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.PartnerBalance{}
	for rows.Next() {
		var b ledger.PartnerBalance
		var currency string
		var balance, pending minorSum
		if err := rows.Scan(&b.ProgramID, &b.ProgramName, &currency, &balance, &pending); err != nil {
			return nil, err
		}
		b.Currency, b.Balance, b.Pending = ledger.Currency(currency), int64(balance), int64(pending)
		out = append(out, b)
	}
	return out, rows.Err()
}

// MarkNotificationRead marks one of the partner's notifications read; a
// notification of anyone else is not found.
func (s *PortalService) MarkNotificationRead(ctx context.Context, partnerID, notificationID int64) (n *ledger.StoredNotification, err error) {
	defer wrap(&err, "postgres.MarkNotificationRead(%d, %d)", partnerID, notificationID)
	ns := &NotificationStore{db: s.db}
	list, err := ns.list(ctx, `
		UPDATE notifications SET read_at = COALESCE(read_at, $3)
		WHERE id = $1 AND partner_id = $2
		RETURNING id, outbox_id, partner_id, workspace_id, kind, title, body, data, created_at, read_at`,
		notificationID, partnerID, s.db.now())
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgNotificationNotFound)
	}
	return &list[0], nil
}

// MarkAllNotificationsRead marks the partner's unread notifications read.
func (s *PortalService) MarkAllNotificationsRead(ctx context.Context, partnerID int64) (n int64, err error) {
	defer wrap(&err, "postgres.MarkAllNotificationsRead(%d)", partnerID)
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET read_at = $2 WHERE partner_id = $1 AND read_at IS NULL`,
		partnerID, s.db.now())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
