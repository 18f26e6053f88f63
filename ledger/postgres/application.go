package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

const applicationColumns = `id, program_id, email, name, COALESCE(message, ''), COALESCE(website, ''), status,
	COALESCE(reason, ''), group_id, partner_id, decided_at, created_at`

func scanApplication(row interface{ Scan(...any) error }) (*ledger.Application, error) {
	a := &ledger.Application{}
	if err := row.Scan(&a.ID, &a.ProgramID, &a.Email, &a.Name, &a.Message, &a.Website, &a.Status,
		&a.Reason, &a.GroupID, &a.PartnerID, &a.DecidedAt, &a.CreatedAt); err != nil {
		return nil, err
	}
	a.CreatedAt = a.CreatedAt.UTC()
	if a.DecidedAt != nil {
		*a.DecidedAt = a.DecidedAt.UTC()
	}
	return a, nil
}

// PublicProgram returns the terms of an active program by its slug.
func (s *IntakeService) PublicProgram(ctx context.Context, slug string) (pp *ledger.PublicProgram, err error) {
	defer wrap(&err, "postgres.PublicProgram(%q)", slug)
	if !ledger.ValidPublicSlug(slug) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPublicNotFound)
	}
	pp = &ledger.PublicProgram{}
	var ctype, currency string
	err = s.db.QueryRowContext(ctx, `
		SELECT slug, name, domain, commission_type, commission_rate, duration_months, cookie_duration,
			hold_days, currency, partner_approval
		FROM programs WHERE slug = $1 AND status = 'active'`, slug).Scan(&pp.Slug, &pp.Name, &pp.Domain,
		&ctype, &pp.CommissionRate, &pp.DurationMonths, &pp.CookieDuration, &pp.HoldDays, &currency, &pp.PartnerApproval)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPublicNotFound)
	} else if err != nil {
		return nil, err
	}
	pp.CommissionType, pp.Currency = ledger.CommissionType(ctype), ledger.Currency(currency)
	return pp, nil
}

// Apply records an application to the active program of slug: answered
// with the pending one of the same email when there is one, and with an
// unsaved one for an email already a partner; approved at once when the
// program's partner_approval is auto; otherwise each owner and admin of
// the workspace gets the application_received email.
func (s *IntakeService) Apply(ctx context.Context, slug string, r ledger.ApplicationRequest) (a *ledger.Application, created bool, err error) {
	defer wrap(&err, "postgres.Apply(%q)", slug)
	if !ledger.ValidPublicSlug(slug) {
		return nil, false, ledger.NewError(ledger.ENotFound, ledger.MsgPublicNotFound)
	}
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		created, msgs = false, nil
		p := &programBrief{}
		err := tx.QueryRowContext(ctx, `
			SELECT id, workspace_id, name, status, partner_approval FROM programs WHERE slug = $1 FOR KEY SHARE`,
			slug).Scan(&p.id, &p.workspaceID, &p.name, &p.status, &p.approval)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && p.status != "active") {
			return ledger.NewError(ledger.ENotFound, ledger.MsgPublicNotFound)
		} else if err != nil {
			return err
		}
		if partner, err := isPartner(ctx, tx, p.id, r.Email); err != nil {
			return err
		} else if partner {
			// Nothing to record; answered as an application is, so that the
			// public route tells nobody who the program's partners are.
			a = &ledger.Application{ProgramID: p.id, Email: r.Email, Name: r.Name, Status: ledger.ApplicationPending}
			if p.approval == ledger.ApprovalAuto {
				a.Status = ledger.ApplicationApproved
			}
			return nil
		}
		a, err = scanApplication(tx.QueryRowContext(ctx, `
			INSERT INTO partner_applications (program_id, email, name, message, website, created_at)
			VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6)
			ON CONFLICT (program_id, email) WHERE status = 'pending' DO NOTHING
			RETURNING `+applicationColumns, p.id, r.Email, r.Name, r.Message, r.Website, now))
		if errors.Is(err, sql.ErrNoRows) {
			a, err = scanApplication(tx.QueryRowContext(ctx, `SELECT `+applicationColumns+`
				FROM partner_applications WHERE program_id = $1 AND email = $2 AND status = 'pending'`, p.id, r.Email))
			return err
		} else if err != nil {
			return err
		}
		created = true
		if p.approval == ledger.ApprovalAuto {
			a, msgs, err = s.approve(ctx, tx, p, a, 0, nil, now)
			return err
		}
		recipients, err := brandRecipients(ctx, tx, p.workspaceID)
		if err != nil {
			return err
		}
		for _, to := range recipients {
			m, err := insertEmail(ctx, tx, to, ledger.ApplicationReceivedEmail{
				ProgramName: p.name, ApplicantName: a.Name, ApplicantEmail: a.Email, Message: a.Message,
				ReviewURL: s.baseURL + "/app/programs/" + strconv.FormatInt(p.id, 10) + "/applications",
			}, now)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		return nil
	})
	if err != nil {
		return nil, false, formatError(err)
	}
	s.after.send(msgs)
	return a, created, nil
}

// approve approves a locked pending application: the applicant becomes an
// active partner (enrollActive), the application records the decision,
// the applicant gets application_approved, and the audit row is written
// (actor 0: the program's automatic approval).
func (s *IntakeService) approve(ctx context.Context, tx *sqlx.Tx, p *programBrief, a *ledger.Application, actor int64, groupID *int64, now time.Time) (*ledger.Application, []ledger.OutboxMessage, error) {
	en, msgs, err := enrollActive(ctx, tx, p.id, a.Email, a.Name, groupID, now)
	if err != nil {
		return nil, nil, err
	}
	var decidedBy *int64
	if actor != 0 {
		decidedBy = &actor
	}
	a, err = scanApplication(tx.QueryRowContext(ctx, `
		UPDATE partner_applications SET status = 'approved', group_id = $2, partner_id = $3, decided_by = $4, decided_at = $5
		WHERE id = $1 RETURNING `+applicationColumns, a.ID, en.GroupID, en.PartnerID, decidedBy, now))
	if err != nil {
		return nil, nil, err
	}
	m, err := insertEmail(ctx, tx, a.Email, ledger.ApplicationApprovedEmail{
		ProgramName: p.name, PartnerName: en.Name, DashboardURL: s.baseURL + "/partner/",
	}, now)
	if err != nil {
		return nil, nil, err
	}
	msgs = append(msgs, m)
	err = insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: p.id, ActorUserID: actor, Action: "application.approved",
		SubjectType: "application", SubjectID: a.ID, Details: map[string]any{
			"email": a.Email, "partner_id": en.PartnerID, "group_id": en.GroupID, "link_id": en.LinkID, "automatic": actor == 0,
		}}, now)
	return a, msgs, err
}

// lockApplication reads an application of the program for a decision.
// Errors: ENotFound, EConflict (decided).
func lockApplication(ctx context.Context, tx *sqlx.Tx, programID, applicationID int64) (*ledger.Application, error) {
	a, err := scanApplication(tx.QueryRowContext(ctx, `SELECT `+applicationColumns+` FROM partner_applications
		WHERE id = $1 AND program_id = $2 FOR UPDATE`, applicationID, programID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgApplicationNotFound)
	} else if err != nil {
		return nil, err
	}
	if a.Status != ledger.ApplicationPending {
		return nil, ledger.NewError(ledger.EConflict, ledger.MsgApplicationDecided)
	}
	return a, nil
}

// ApproveApplication approves a pending application of the program.
func (s *IntakeService) ApproveApplication(ctx context.Context, programID, applicationID, actor int64, groupID *int64) (a *ledger.Application, err error) {
	defer wrap(&err, "postgres.ApproveApplication(%d, %d)", programID, applicationID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		p, err := lockProgram(ctx, tx, programID)
		if err != nil {
			return err
		}
		cur, err := lockApplication(ctx, tx, programID, applicationID)
		if err != nil {
			return err
		}
		if err := checkGroup(ctx, tx, programID, groupID); err != nil {
			return err
		}
		a, msgs, err = s.approve(ctx, tx, p, cur, actor, groupID, now)
		return err
	})
	if err != nil {
		return nil, formatError(err)
	}
	s.after.send(msgs)
	return a, nil
}

// RejectApplication rejects a pending application of the program; the
// applicant gets application_rejected with the reason.
func (s *IntakeService) RejectApplication(ctx context.Context, programID, applicationID, actor int64, reason string) (a *ledger.Application, err error) {
	defer wrap(&err, "postgres.RejectApplication(%d, %d)", programID, applicationID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		p, err := lockProgram(ctx, tx, programID)
		if err != nil {
			return err
		}
		if _, err := lockApplication(ctx, tx, programID, applicationID); err != nil {
			return err
		}
		var decidedBy *int64
		if actor != 0 {
			decidedBy = &actor
		}
		a, err = scanApplication(tx.QueryRowContext(ctx, `
			UPDATE partner_applications SET status = 'rejected', reason = NULLIF($2, ''), decided_by = $3, decided_at = $4
			WHERE id = $1 RETURNING `+applicationColumns, applicationID, reason, decidedBy, now))
		if err != nil {
			return err
		}
		m, err := insertEmail(ctx, tx, a.Email, ledger.ApplicationRejectedEmail{
			ProgramName: p.name, PartnerName: a.Name, Reason: reason,
		}, now)
		if err != nil {
			return err
		}
		msgs = []ledger.OutboxMessage{m}
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: programID, ActorUserID: actor, Action: "application.rejected",
			SubjectType: "application", SubjectID: a.ID, Details: map[string]any{"email": a.Email, "reason": reason}}, now)
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return a, nil
}

// ListApplications returns a page of the program's applications, newest
// first, and the number matching.
func (s *IntakeService) ListApplications(ctx context.Context, q ledger.ApplicationQuery) (p *ledger.ApplicationPage, err error) {
	defer wrap(&err, "postgres.ListApplications(%d)", q.ProgramID)
	cond, args := "program_id = $1", []any{q.ProgramID}
	if q.Status != "" {
		cond += " AND status = $2"
		args = append(args, q.Status)
	}
	p = &ledger.ApplicationPage{Page: q.Page, PageSize: q.PageSize}
	p.Total, p.Applications, err = readPage(ctx, s.db, "partner_applications", applicationColumns, cond, args, q.PageSize, q.Offset(), scanApplication)
	return p, err
}
