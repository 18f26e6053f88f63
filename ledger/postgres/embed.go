package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// The referral widget's storage (ledger.EmbedService): tokens are stored
// as their SHA-256 only; the first open enrolls the user through
// enrollActive, the one enrollment path of invites and applications.

var _ ledger.EmbedService = (*IntakeService)(nil)

// embedExpiredBatch bounds the expired tokens one mint deletes, as
// useIDToken bounds used id_tokens: the table stays small without a task.
const embedExpiredBatch = 100

// CreateEmbedToken stores a new token of the request's user.
func (s *IntakeService) CreateEmbedToken(ctx context.Context, r ledger.EmbedTokenRequest) (t *ledger.EmbedToken, err error) {
	defer wrap(&err, "postgres.CreateEmbedToken(%d)", r.ProgramID)
	now := s.db.now()
	token, expires := ledger.NewEmbedToken(now)
	var name *string
	if r.Name != "" {
		name = &r.Name
	}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO embed_tokens (token_hash, program_id, email, name, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, ledger.HashSecret(token), r.ProgramID, r.Email, name, now, expires); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			DELETE FROM embed_tokens WHERE token_hash IN (
				SELECT token_hash FROM embed_tokens WHERE expires_at < $1 LIMIT $2)`, now, embedExpiredBatch)
		return err
	})
	if err != nil {
		return nil, formatError(err)
	}
	return &ledger.EmbedToken{Token: token, ProgramID: r.ProgramID, Email: r.Email, ExpiresAt: expires}, nil
}

// EmbedGrant reads what a token grants, expired or not (the caller tells
// an expired token from an unknown one).
func (s *IntakeService) EmbedGrant(ctx context.Context, token string) (g *ledger.EmbedGrant, err error) {
	defer wrap(&err, "postgres.EmbedGrant")
	g = &ledger.EmbedGrant{}
	var name sql.NullString
	err = s.db.QueryRowContext(ctx, `
		SELECT t.program_id, t.email, t.name, t.expires_at, p.domain
		FROM embed_tokens t JOIN programs p ON p.id = t.program_id
		WHERE t.token_hash = $1`, ledger.HashSecret(token)).Scan(&g.ProgramID, &g.Email, &name, &g.ExpiresAt, &g.Domain)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgEmbedTokenUnknown)
	} else if err != nil {
		return nil, err
	}
	g.Name, g.ExpiresAt = name.String, g.ExpiresAt.UTC()
	return g, nil
}

// OpenEmbed enrolls the grant's user on first open, then reads the view.
// Concurrent first opens both try; the enrollment's unique key lets one
// through and the other finds it enrolled (EConflict from enrollActive),
// which is the same outcome as a later open.
func (s *IntakeService) OpenEmbed(ctx context.Context, g *ledger.EmbedGrant) (v *ledger.EmbedView, err error) {
	defer wrap(&err, "postgres.OpenEmbed(%d)", g.ProgramID)
	now := s.db.now()
	name := ledger.EmbedTokenRequest{Email: g.Email, Name: g.Name}.PartnerName()
	var msgs []ledger.OutboxMessage
	enrolled := false
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		msgs, enrolled = nil, false
		p, err := lockProgram(ctx, tx, g.ProgramID)
		if err != nil {
			return err
		}
		var status string
		err = tx.QueryRowContext(ctx, `
			SELECT e.status FROM enrollments e JOIN partners pa ON pa.id = e.partner_id
			WHERE e.program_id = $1 AND pa.email = $2 FOR UPDATE OF e`, p.id, g.Email).Scan(&status)
		if !errors.Is(err, sql.ErrNoRows) {
			return err // enrolled already (in any state), or a failure
		}
		if p.status != "active" {
			return nil // the program takes nobody
		}
		en, m, err := enrollActive(ctx, tx, p.id, g.Email, name, nil, now)
		if err != nil {
			return err
		}
		msgs, enrolled = m, true
		return insertAudit(ctx, tx, ledger.AuditEntry{ProgramID: p.id, Action: "partner.enrolled_by_embed",
			SubjectType: "partner", SubjectID: en.PartnerID,
			Details: map[string]any{"email": g.Email, "group_id": en.GroupID, "link_id": en.LinkID}}, now)
	})
	if ledger.ErrorCode(err) == ledger.EConflict && ledger.ErrorMessage(err) == ledger.MsgAlreadyPartner {
		err = nil // a concurrent open enrolled the user first
	}
	if err != nil {
		return nil, formatError(err)
	}
	s.after.send(msgs)
	v, err = s.embedView(ctx, g)
	if err != nil {
		return nil, err
	}
	v.Enrolled = enrolled
	return v, nil
}

// embedView reads the program, the user's enrollment and links, and the
// user's numbers over all time from the rollups (migration 00016): the
// program's rows of the partner, summed exactly (as text).
func (s *IntakeService) embedView(ctx context.Context, g *ledger.EmbedGrant) (*ledger.EmbedView, error) {
	v := &ledger.EmbedView{Status: ledger.EmbedClosed}
	var (
		domain, ctype, currency string
		rate                    decimal.Decimal
		duration                int
		partnerID               sql.NullInt64
		status                  sql.NullString
		pType                   sql.NullString
		pRate                   decimal.NullDecimal
		pDuration, pHold        sql.NullInt32
	)
	err := s.db.QueryRowContext(ctx, `
		SELECT p.name, p.domain, p.commission_type, p.commission_rate, p.duration_months, p.hold_days, p.currency,
			pa.id, e.status, cp.commission_type, cp.commission_rate, cp.duration_months, cp.hold_days
		FROM programs p
		LEFT JOIN (enrollments e JOIN partners pa ON pa.id = e.partner_id)
			ON e.program_id = p.id AND pa.email = $2
		LEFT JOIN partner_groups pg ON pg.id = e.group_id
		LEFT JOIN commission_policies cp ON cp.id = pg.policy_id
		WHERE p.id = $1`, g.ProgramID, g.Email).Scan(&v.ProgramName, &domain, &ctype, &rate, &duration, &v.HoldDays, &currency,
		&partnerID, &status, &pType, &pRate, &pDuration, &pHold)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgEmbedTokenUnknown)
	} else if err != nil {
		return nil, err
	}
	terms := ledger.PublicProgram{CommissionType: ledger.CommissionType(ctype), CommissionRate: rate,
		DurationMonths: duration, Currency: ledger.Currency(currency)}
	if pType.Valid && pRate.Valid {
		terms.CommissionType, terms.CommissionRate = ledger.CommissionType(pType.String), pRate.Decimal
		terms.DurationMonths, v.HoldDays = int(pDuration.Int32), int(pHold.Int32)
	}
	v.Terms = terms.CommissionWords()
	if !partnerID.Valid {
		return v, nil
	}
	// The name the brand gave its user (or the email's local part), never
	// the partner row's: another workspace may have set that one.
	v.Status, v.PartnerName = status.String, ledger.EmbedTokenRequest{Email: g.Email, Name: g.Name}.PartnerName()
	rows, err := s.db.QueryContext(ctx, `
		SELECT code, active FROM links WHERE program_id = $1 AND partner_id = $2 AND NOT is_test ORDER BY active DESC, id`,
		g.ProgramID, partnerID.Int64)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		l := ledger.BrandLink{Domain: domain}
		if err := rows.Scan(&l.Code, &l.Active); err != nil {
			rows.Close()
			return nil, err
		}
		v.Links = append(v.Links, ledger.EmbedLink{Code: l.Code, Active: l.Active, URL: l.URL()})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := s.db.QueryRowContext(ctx, `
		SELECT COALESCE(sum(clicks), 0), COALESCE(sum(leads), 0) FROM rollup_traffic_daily
		WHERE program_id = $1 AND partner_id = $2`, g.ProgramID, partnerID.Int64).Scan(&v.Clicks, &v.Leads); err != nil {
		return nil, err
	}
	rows, err = s.db.QueryContext(ctx, `
		SELECT currency, sum(conversions)::text, sum(commission_minor)::text FROM rollup_sales_daily
		WHERE program_id = $1 AND partner_id = $2 GROUP BY currency ORDER BY currency`, g.ProgramID, partnerID.Int64)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var cur, conv, commission string
		if err := rows.Scan(&cur, &conv, &commission); err != nil {
			return nil, err
		}
		n, err := decimal.NewFromString(conv)
		if err != nil {
			return nil, err
		}
		m, err := decimal.NewFromString(commission)
		if err != nil {
			return nil, err
		}
		v.Conversions += n.IntPart()
		if m.IsPositive() {
			v.Earnings = append(v.Earnings, ledger.EmbedMoney{Currency: ledger.Currency(cur), Minor: m})
		}
	}
	return v, rows.Err()
}
