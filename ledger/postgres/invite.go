package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

const inviteColumns = `id, program_id, email, group_id, COALESCE(message, ''), status, partner_id,
	expires_at, last_sent_at, accepted_at, cancelled_at, created_at, updated_at`

func scanInvite(row interface{ Scan(...any) error }) (*ledger.Invite, error) {
	i := &ledger.Invite{}
	if err := row.Scan(&i.ID, &i.ProgramID, &i.Email, &i.GroupID, &i.Message, &i.Status, &i.PartnerID,
		&i.ExpiresAt, &i.LastSentAt, &i.AcceptedAt, &i.CancelledAt, &i.CreatedAt, &i.UpdatedAt); err != nil {
		return nil, err
	}
	i.ExpiresAt, i.LastSentAt, i.CreatedAt, i.UpdatedAt = i.ExpiresAt.UTC(), i.LastSentAt.UTC(), i.CreatedAt.UTC(), i.UpdatedAt.UTC()
	for _, t := range []*time.Time{i.AcceptedAt, i.CancelledAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return i, nil
}

// inviteTokenHash is how an invite's token is stored: the hex SHA-256.
func inviteTokenHash(token string) string { return hex.EncodeToString(ledger.HashSecret(token)) }

// inviteCandidate is one partner an invite request names.
type inviteCandidate struct {
	email     string
	partnerID *int64
}

// CreateInvites invites the request's emails and partners in one
// transaction, writing each invite's email to the outbox and its audit row.
func (s *IntakeService) CreateInvites(ctx context.Context, programID int64, r ledger.InviteRequest) (res *ledger.InviteResult, err error) {
	defer wrap(&err, "postgres.CreateInvites(%d)", programID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		res, msgs = &ledger.InviteResult{Invited: []ledger.Invite{}, Skipped: []ledger.InviteSkip{}}, nil
		p, err := lockProgram(ctx, tx, programID)
		if err != nil {
			return err
		}
		if err := checkGroup(ctx, tx, programID, r.GroupID); err != nil {
			return err
		}
		candidates := make([]inviteCandidate, 0, len(r.Emails)+len(r.PartnerIDs))
		for _, e := range r.Emails {
			candidates = append(candidates, inviteCandidate{email: e})
		}
		known, err := workspacePartners(ctx, tx, p, r.PartnerIDs)
		if err != nil {
			return err
		}
		for _, id := range r.PartnerIDs {
			id := id
			candidates = append(candidates, inviteCandidate{email: known[id], partnerID: &id})
		}
		seen := map[string]bool{}
		for _, c := range candidates {
			skip := func(reason string) {
				res.Skipped = append(res.Skipped, ledger.InviteSkip{Email: c.email, PartnerID: c.partnerID, Reason: reason})
			}
			if c.email == "" {
				skip(ledger.SkipUnknownPartner)
				continue
			}
			if seen[c.email] {
				skip(ledger.SkipDuplicate)
				continue
			}
			seen[c.email] = true
			if partner, err := isPartner(ctx, tx, programID, c.email); err != nil {
				return err
			} else if partner {
				skip(ledger.SkipAlreadyPartner)
				continue
			}
			inv, token, err := s.issueInvite(ctx, tx, programID, c.email, r, now)
			if err != nil {
				return err
			}
			if inv == nil {
				skip(ledger.SkipAlreadyInvited)
				continue
			}
			m, err := s.inviteEmail(ctx, tx, p, inv, token, now)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
			details := map[string]any{"email": inv.Email, "group_id": inv.GroupID}
			if c.partnerID != nil {
				details["partner_id"] = *c.partnerID
			}
			if err := insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: programID, ActorUserID: r.ActorUserID,
				Action: "invite.created", SubjectType: "invite", SubjectID: inv.ID, Details: details}, now); err != nil {
				return err
			}
			res.Invited = append(res.Invited, *inv)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return res, nil
}

// workspacePartners maps the ids among ids of partners enrolled in a
// program of p's workspace (p included: such a partner is then skipped as
// already a partner) to their emails; any other id is left out, so it
// tells the caller nothing. The test partner is never one.
func workspacePartners(ctx context.Context, tx *sqlx.Tx, p *programBrief, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT DISTINCT pa.id, pa.email FROM partners pa
		JOIN enrollments e ON e.partner_id = pa.id
		JOIN programs pr ON pr.id = e.program_id
		WHERE pa.id = ANY($1) AND pr.workspace_id = $2 AND NOT pa.is_test`,
		pq.Array(ids), p.workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var email string
		if err := rows.Scan(&id, &email); err != nil {
			return nil, err
		}
		out[id] = email
	}
	return out, rows.Err()
}

// issueInvite writes a pending invite of email with a new token: a new
// row, or the program's pending invite of the email when it has expired
// (issued again). It returns nil when a pending invite has not expired.
func (s *IntakeService) issueInvite(ctx context.Context, tx *sqlx.Tx, programID int64, email string, r ledger.InviteRequest, now time.Time) (*ledger.Invite, string, error) {
	token := ledger.NewInviteToken()
	expires := now.Add(ledger.InviteTTL)
	var msg *string
	if r.Message != "" {
		msg = &r.Message
	}
	var actor *int64
	if r.ActorUserID != 0 {
		actor = &r.ActorUserID
	}
	inv, err := scanInvite(tx.QueryRowContext(ctx, `
		UPDATE partner_invites SET token_hash = $3, expires_at = $4, last_sent_at = $5, group_id = $6, message = $7,
			invited_by = $8, updated_at = $5
		WHERE program_id = $1 AND email = $2 AND status = 'pending' AND expires_at <= $5
		RETURNING `+inviteColumns, programID, email, inviteTokenHash(token), expires, now, r.GroupID, msg, actor))
	if err == nil {
		return inv, token, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return nil, "", err
	}
	inv, err = scanInvite(tx.QueryRowContext(ctx, `
		INSERT INTO partner_invites (program_id, email, group_id, message, token_hash, invited_by, expires_at, last_sent_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)
		ON CONFLICT (program_id, email) WHERE status = 'pending' DO NOTHING
		RETURNING `+inviteColumns, programID, email, r.GroupID, msg, inviteTokenHash(token), actor, expires, now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	return inv, token, err
}

// inviteEmail writes the partner_invite email of inv with its token's link.
func (s *IntakeService) inviteEmail(ctx context.Context, tx *sqlx.Tx, p *programBrief, inv *ledger.Invite, token string, now time.Time) (ledger.OutboxMessage, error) {
	return insertEmail(ctx, tx, inv.Email, ledger.PartnerInviteEmail{
		ProgramName: p.name, BrandMessage: inv.Message,
		AcceptURL: ledger.InviteAcceptURL(s.baseURL, token), ExpiresAt: inv.ExpiresAt,
	}, now)
}

// ListInvites returns a page of the program's invites, newest first, and
// the number matching.
func (s *IntakeService) ListInvites(ctx context.Context, q ledger.InviteQuery) (p *ledger.InvitePage, err error) {
	defer wrap(&err, "postgres.ListInvites(%d)", q.ProgramID)
	now := s.db.now()
	where := []string{"program_id = $1"}
	args := []any{q.ProgramID}
	switch q.Status {
	case ledger.InvitePending:
		args = append(args, now)
		where = append(where, "status = 'pending'", "expires_at > $2")
	case ledger.InviteExpired:
		args = append(args, now)
		where = append(where, "status = 'pending'", "expires_at <= $2")
	case ledger.InviteAccepted, ledger.InviteCancelled, ledger.InviteDeclined:
		args = append(args, q.Status)
		where = append(where, "status = $2")
	}
	cond := strings.Join(where, " AND ")
	p = &ledger.InvitePage{Page: q.Page, PageSize: q.PageSize}
	p.Total, p.Invites, err = readPage(ctx, s.db, "partner_invites", inviteColumns, cond, args, q.PageSize, q.Offset(), scanInvite)
	return p, err
}

// lockInvite reads an invite of the program for a change. Errors:
// ENotFound.
func lockInvite(ctx context.Context, tx *sqlx.Tx, programID, inviteID int64) (*ledger.Invite, error) {
	inv, err := scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM partner_invites
		WHERE id = $1 AND program_id = $2 FOR UPDATE`, inviteID, programID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
	}
	return inv, err
}

// ResendInvite sends a pending (or expired) invite again with a new token:
// the earlier link stops working, and the invite expires InviteTTL from
// now.
func (s *IntakeService) ResendInvite(ctx context.Context, programID, inviteID, actor int64) (inv *ledger.Invite, err error) {
	defer wrap(&err, "postgres.ResendInvite(%d, %d)", programID, inviteID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		p, err := lockProgram(ctx, tx, programID)
		if err != nil {
			return err
		}
		cur, err := lockInvite(ctx, tx, programID, inviteID)
		if err != nil {
			return err
		}
		if cur.Status != ledger.InvitePending {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteResendState)
		}
		if now.Sub(cur.LastSentAt) < ledger.InviteResendInterval {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteResendTooSoon)
		}
		token := ledger.NewInviteToken()
		inv, err = scanInvite(tx.QueryRowContext(ctx, `
			UPDATE partner_invites SET token_hash = $2, expires_at = $3, last_sent_at = $4, updated_at = $4
			WHERE id = $1 RETURNING `+inviteColumns, inviteID, inviteTokenHash(token), now.Add(ledger.InviteTTL), now))
		if err != nil {
			return err
		}
		m, err := s.inviteEmail(ctx, tx, p, inv, token, now)
		if err != nil {
			return err
		}
		msgs = []ledger.OutboxMessage{m}
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: programID, ActorUserID: actor,
			Action: "invite.resent", SubjectType: "invite", SubjectID: inv.ID,
			Details: map[string]any{"email": inv.Email, "expires_at": inv.ExpiresAt}}, now)
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return inv, nil
}

// CancelInvite cancels a pending (or expired) invite: its link stops
// working.
func (s *IntakeService) CancelInvite(ctx context.Context, programID, inviteID, actor int64) (inv *ledger.Invite, err error) {
	defer wrap(&err, "postgres.CancelInvite(%d, %d)", programID, inviteID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		cur, err := lockInvite(ctx, tx, programID, inviteID)
		if err != nil {
			return err
		}
		if cur.Status != ledger.InvitePending {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteCancelState)
		}
		inv, err = scanInvite(tx.QueryRowContext(ctx, `
			UPDATE partner_invites SET status = 'cancelled', cancelled_at = $2, updated_at = $2
			WHERE id = $1 RETURNING `+inviteColumns, inviteID, now))
		if err != nil {
			return err
		}
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: programID, ActorUserID: actor,
			Action: "invite.cancelled", SubjectType: "invite", SubjectID: inv.ID,
			Details: map[string]any{"email": inv.Email}}, now)
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// AcceptInvite accepts the invite of token for email: the partner becomes
// active in the invite's group with a new link; the partner.enrolled
// webhook and the audit row (actor: the system) are written with it.
func (s *IntakeService) AcceptInvite(ctx context.Context, token, emailIn, name string) (en *ledger.Enrollment, err error) {
	defer wrap(&err, "postgres.AcceptInvite")
	if token == "" {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
	}
	return s.acceptInvite(ctx, emailIn, name, func(tx *sqlx.Tx) (*ledger.Invite, error) {
		return scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM partner_invites
			WHERE token_hash = $1 FOR UPDATE`, inviteTokenHash(token)))
	})
}

// acceptInvite accepts the invite find locks (by its token, or by its id
// from the partner portal) for email: the one write path of an accepted
// invite.
func (s *IntakeService) acceptInvite(ctx context.Context, emailIn, name string, find func(tx *sqlx.Tx) (*ledger.Invite, error)) (en *ledger.Enrollment, err error) {
	email, ok := ledger.NormalizeEmail(emailIn)
	if !ok {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
	}
	name = ledger.PartnerName(name, email)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		inv, err := find(tx)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && inv.Email != email) {
			return ledger.NewError(ledger.ENotFound, ledger.MsgInviteNotFound)
		} else if err != nil {
			return err
		}
		if inv.Status != ledger.InvitePending {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteAcceptState)
		}
		if inv.StatusAt(now) == ledger.InviteExpired {
			return ledger.NewError(ledger.EConflict, ledger.MsgInviteExpired)
		}
		if _, err := lockProgram(ctx, tx, inv.ProgramID); err != nil {
			return err
		}
		en, msgs, err = enrollActive(ctx, tx, inv.ProgramID, email, name, inv.GroupID, now)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE partner_invites SET status = 'accepted', accepted_at = $2, partner_id = $3, updated_at = $2
			WHERE id = $1`, inv.ID, now, en.PartnerID); err != nil {
			return err
		}
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: inv.ProgramID, Action: "invite.accepted",
			SubjectType: "invite", SubjectID: inv.ID,
			Details: map[string]any{"email": email, "partner_id": en.PartnerID, "group_id": en.GroupID, "link_id": en.LinkID}}, now)
	})
	if err != nil {
		return nil, formatError(err)
	}
	s.after.send(msgs)
	return en, nil
}
