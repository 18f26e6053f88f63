package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// CLIService implements ledger.CLILoginService (the browser login of the
// CLI) and ledger.CLIService (its program commands).
type CLIService struct{ db *DB }

// NewCLIService returns the CLI service over db.
func NewCLIService(db *DB) *CLIService { return &CLIService{db: db} }

var (
	_ ledger.CLILoginService = (*CLIService)(nil)
	_ ledger.CLIService      = (*CLIService)(nil)
)

// cliSessionRetention is how long an expired login session is kept, so
// that a late poll answers "expired" rather than "not found".
const cliSessionRetention = 24 * time.Hour

// StartLogin stores a pending session under the hash of a fresh state,
// and deletes a bounded batch of sessions expired for a day.
func (s *CLIService) StartLogin(ctx context.Context, opts ledger.CLILoginOptions) (start *ledger.CLILoginStart, err error) {
	defer wrap(&err, "postgres.StartLogin")
	now := s.db.now()
	start = &ledger.CLILoginStart{State: ledger.NewSecret(""), UserCode: ledger.NewUserCode(), ExpiresAt: now.Add(ledger.CLILoginTTL)}
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO cli_sessions (state_hash, status, created_at, expires_at, user_code, user_agent, code_challenge)
			VALUES ($1, 'pending', $2, $3, $4, $5, $6)`,
			ledger.HashSecret(start.State), now, start.ExpiresAt, start.UserCode,
			ledger.CLIUserAgent(opts.UserAgent), nullable(opts.CodeChallenge)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			DELETE FROM cli_sessions WHERE state_hash IN (
				SELECT state_hash FROM cli_sessions WHERE expires_at < $1 LIMIT 100)`,
			now.Add(-cliSessionRetention))
		return err
	})
	if err != nil {
		return nil, err
	}
	return start, nil
}

// findLogin reads the session of state (nil when none), locked when
// forUpdate.
func findLogin(ctx context.Context, q queryer, state string, forUpdate bool) (*ledger.CLILogin, error) {
	query := `SELECT status, user_id, created_at, expires_at, COALESCE(user_code, '') AS user_code,
		COALESCE(user_agent, '') AS user_agent, confirmed_at IS NOT NULL AS confirmed,
		COALESCE(code_challenge, '') AS code_challenge FROM cli_sessions WHERE state_hash = $1`
	if forUpdate {
		query += ` FOR UPDATE`
	}
	var row struct {
		Status    string    `db:"status"`
		UserID    *int64    `db:"user_id"`
		CreatedAt time.Time `db:"created_at"`
		ExpiresAt time.Time `db:"expires_at"`
		UserCode  string    `db:"user_code"`
		UserAgent string    `db:"user_agent"`
		Confirmed bool      `db:"confirmed"`
		Challenge string    `db:"code_challenge"`
	}
	if err := q.GetContext(ctx, &row, query, ledger.HashSecret(state)); errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &ledger.CLILogin{State: ledger.CLILoginState(row.Status), UserID: row.UserID,
		CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC(), UserCode: row.UserCode,
		UserAgent: row.UserAgent, Confirmed: row.Confirmed, CodeChallenge: row.Challenge}, nil
}

// LoginInfo reads the session of state for the sign-in page.
func (s *CLIService) LoginInfo(ctx context.Context, state string) (l *ledger.CLILogin, err error) {
	defer wrap(&err, "postgres.LoginInfo")
	return findLogin(ctx, s.db, state, false)
}

// ConfirmLogin records the person's confirmation of the user code.
func (s *CLIService) ConfirmLogin(ctx context.Context, state, userCode string) (err error) {
	defer wrap(&err, "postgres.ConfirmLogin")
	now := s.db.now()
	return s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		l, err := findLogin(ctx, tx, state, true)
		if err != nil {
			return err
		}
		if err := l.CheckConfirm(userCode, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE cli_sessions SET confirmed_at = COALESCE(confirmed_at, $2) WHERE state_hash = $1`,
			ledger.HashSecret(state), now)
		return err
	})
}

// CheckLogin tells whether the callback may complete the session.
func (s *CLIService) CheckLogin(ctx context.Context, state string) (err error) {
	defer wrap(&err, "postgres.CheckLogin")
	l, err := findLogin(ctx, s.db, state, false)
	if err != nil {
		return err
	}
	return l.CheckCallback(s.db.now())
}

// CompleteLogin marks the session signed in by userID.
func (s *CLIService) CompleteLogin(ctx context.Context, state string, userID int64) (err error) {
	defer wrap(&err, "postgres.CompleteLogin")
	now := s.db.now()
	return s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		l, err := findLogin(ctx, tx, state, true)
		if err != nil {
			return err
		}
		if err := l.CheckCallback(now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE cli_sessions SET status = 'signed_in', user_id = $2, signed_in_at = $3 WHERE state_hash = $1`,
			ledger.HashSecret(state), userID, now)
		return err
	})
}

// PollLogin answers a poll; the first poll after sign-in mints the CLI
// login token and consumes the session in one transaction, so two
// concurrent polls never both get a token.
func (s *CLIService) PollLogin(ctx context.Context, state, verifier string) (p *ledger.CLIPoll, err error) {
	defer wrap(&err, "postgres.PollLogin")
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		l, err := findLogin(ctx, tx, state, true)
		if err != nil {
			return err
		}
		if err := l.CheckVerifier(verifier); err != nil {
			return err
		}
		status, err := l.Poll(now)
		if err != nil {
			return err
		}
		p = &ledger.CLIPoll{Status: status}
		if status != ledger.PollComplete {
			return nil
		}
		sess, err := createSession(ctx, tx, *l.UserID, ledger.CLISession, now)
		if err != nil {
			return err
		}
		p.Token, p.TokenExpires, p.UserID = sess.Token, sess.ExpiresAt, sess.UserID
		if err := tx.GetContext(ctx, &p.Email, `SELECT email FROM users WHERE id = $1`, sess.UserID); err != nil {
			return err
		}
		roles, err := advertiserRoles(ctx, tx, sess.UserID)
		if err != nil {
			return err
		}
		if id, err := ledger.ResolveAdvertiser(roles, ledger.Input[int64]{}); err == nil {
			p.AdvertiserID = &id
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE cli_sessions SET status = 'consumed', consumed_at = $2 WHERE state_hash = $1`,
			ledger.HashSecret(state), now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

type selecter interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

func advertiserRoles(ctx context.Context, q selecter, userID int64) ([]ledger.AdvertiserRole, error) {
	var rows []struct {
		WorkspaceID int64  `db:"workspace_id"`
		Role        string `db:"role"`
	}
	if err := q.SelectContext(ctx, &rows, `
		SELECT workspace_id, role FROM memberships
		WHERE user_id = $1 AND role IN ('owner', 'admin') ORDER BY workspace_id`, userID); err != nil {
		return nil, err
	}
	out := make([]ledger.AdvertiserRole, len(rows))
	for i, r := range rows {
		out[i] = ledger.AdvertiserRole{WorkspaceID: r.WorkspaceID, Role: ledger.Role(r.Role)}
	}
	return out, nil
}

// AdvertiserRoles returns the workspaces the user owns or administers.
func (s *CLIService) AdvertiserRoles(ctx context.Context, userID int64) (roles []ledger.AdvertiserRole, err error) {
	defer wrap(&err, "postgres.AdvertiserRoles(%d)", userID)
	return advertiserRoles(ctx, s.db, userID)
}

// activePartners counts a program's active enrolments, the test fixture's
// partner excluded (one primary-key range of enrollments).
const activePartners = `(SELECT count(*) FROM enrollments e JOIN partners pa ON pa.id = e.partner_id
	WHERE e.program_id = p.id AND e.status = 'active' AND NOT pa.is_test)`

// Programs lists the programs of the workspaces the user belongs to.
func (s *CLIService) Programs(ctx context.Context, userID int64) (out []ledger.ProgramSummary, err error) {
	defer wrap(&err, "postgres.Programs(%d)", userID)
	var rows []struct {
		ID             int64           `db:"id"`
		Name           string          `db:"name"`
		Domain         string          `db:"domain"`
		Status         string          `db:"status"`
		CommissionType string          `db:"commission_type"`
		CommissionRate decimal.Decimal `db:"commission_rate"`
		DurationMonths int             `db:"duration_months"`
		Currency       string          `db:"currency"`
		Partners       int64           `db:"partners"`
		CreatedAt      time.Time       `db:"created_at"`
	}
	err = s.db.SelectContext(ctx, &rows, `
		SELECT p.id, p.name, p.domain, p.status, p.commission_type, p.commission_rate, p.duration_months,
			p.currency, p.created_at, `+activePartners+` AS partners
		FROM programs p JOIN memberships m ON m.workspace_id = p.workspace_id
		WHERE m.user_id = $1
		ORDER BY p.created_at, p.id`, userID)
	if err != nil {
		return nil, err
	}
	out = make([]ledger.ProgramSummary, len(rows))
	for i, r := range rows {
		out[i] = ledger.ProgramSummary{
			ID: r.ID, Name: r.Name, Domain: r.Domain, Status: r.Status, Partners: r.Partners,
			Commission: ledger.CommissionText(ledger.CommissionType(r.CommissionType), r.CommissionRate,
				r.DurationMonths, ledger.Currency(r.Currency)),
			CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

// Status returns what the CLI's status command shows.
func (s *CLIService) Status(ctx context.Context, programID int64) (st *ledger.ProgramStatus, err error) {
	defer wrap(&err, "postgres.Status(%d)", programID)
	prog, err := findProgram(ctx, s.db, programID, false)
	if err != nil {
		return nil, err
	}
	now := s.db.now()
	st = &ledger.ProgramStatus{ProgramID: prog.ID, Name: prog.Name, Domain: prog.Domain}
	if st.Recent, err = recentCounts(ctx, s.db, programID, now); err != nil {
		return nil, err
	}
	err = s.db.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM processor_accounts WHERE program_id = p.id),
			`+activePartners+`,
			(SELECT count(*) FROM commissions WHERE program_id = p.id AND status = 'pending')
		FROM programs p WHERE p.id = $1`, programID).
		Scan(&st.ProcessorConnected, &st.ActivePartners, &st.PendingCommissions)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// integrationLog filters tracking_logs to what the brand's integration
// sent: never the CLI's test events or the synthetic chain's lead and sale.
const integrationLog = `source NOT IN ('` + ledger.LogSourceCLITest + `', '` + ledger.LogSourceSyntheticChain + `')`

// qRecentClicks counts program $1's real clicks in ($2, $3], a window of
// at most 24 hours: the whole UTC hours inside it from their counters
// (rollup_clicks_hourly, migration 00028, kept ledger.ClickHoursKept) and
// the partial hours at its two ends from clicks (the listing index). The
// ends are together one hour of clicks, where counting the whole window
// read a day of them.
const qRecentClicks = `
	SELECT (SELECT count(*) FROM clicks
			WHERE program_id = $1 AND NOT is_test AND occurred_at > $2
				AND occurred_at < date_trunc('hour', $2::timestamptz, 'UTC') + interval '1 hour')
		+ (SELECT COALESCE(sum(clicks), 0) FROM rollup_clicks_hourly
			WHERE program_id = $1 AND hour >= date_trunc('hour', $2::timestamptz, 'UTC') + interval '1 hour'
				AND hour < date_trunc('hour', $3::timestamptz, 'UTC'))
		+ (SELECT count(*) FROM clicks
			WHERE program_id = $1 AND NOT is_test AND occurred_at >= date_trunc('hour', $3::timestamptz, 'UTC')
				AND occurred_at <= $3)`

// recentCounts counts the program's events of the 24 hours before now:
// real clicks (qRecentClicks), and leads and sales the integration
// sent (the tracking log index), test-mode calls included. A provisional
// lead does not count: its browser_provisional row is left out, and the
// row its settlement writes (the settling server lead's, or a settlement
// row) counts it once, at the time it settled.
func recentCounts(ctx context.Context, q *DB, programID int64, now time.Time) (ledger.EventCounts, error) {
	var c ledger.EventCounts
	since := now.Add(-24 * time.Hour)
	if err := q.QueryRowContext(ctx, qRecentClicks, programID, since, now).Scan(&c.Clicks); err != nil {
		return c, err
	}
	err := q.QueryRowContext(ctx, `
		SELECT count(*) FILTER (WHERE event_type = 'lead' AND source <> '`+leadLogProvisional+`'),
			count(*) FILTER (WHERE event_type = 'sale')
		FROM tracking_logs
		WHERE program_id = $1 AND event_type IN ('lead', 'sale') AND created_at > $2 AND created_at <= $3
			AND `+integrationLog, programID, since, now).Scan(&c.Leads, &c.Sales)
	return c, err
}
