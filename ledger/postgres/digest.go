package postgres

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// DigestService implements ledger.CommissionDigester: the daily digest of
// the commissions each partner earned, one email per partner and day.
type DigestService struct {
	db      *DB
	baseURL string // PUBLIC_BASE_URL: the partner dashboard's link
	after   *afterCommit
	logger  *slog.Logger
}

// DigestOptions are the parts of a DigestService.
type DigestOptions struct {
	PublicBaseURL string
	// Relay sends committed outbox messages at once; nil leaves them to
	// the outbox sweep.
	Relay  ledger.OutboxRelay
	Logger *slog.Logger
}

// NewDigestService returns the digest sender over db.
func NewDigestService(db *DB, opts DigestOptions) *DigestService {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &DigestService{db: db, baseURL: strings.TrimRight(opts.PublicBaseURL, "/"),
		after: newAfterCommit(opts.Relay, opts.Logger), logger: opts.Logger}
}

var _ ledger.CommissionDigester = (*DigestService)(nil)

// WaitRelays waits for the relays started after commits.
func (s *DigestService) WaitRelays() { s.after.wait() }

// digestBatch is how many partners one transaction digests.
const digestBatch = 100

// digestFrom and digestWhere select the commissions a digest counts:
// created in the day [$1, $2), of a real sale (test sales never count),
// not rejected, reversed or fully refunded.
const (
	digestFrom  = ` FROM commissions cm JOIN sales s ON s.id = cm.sale_id `
	digestWhere = ` cm.created_at >= $1 AND cm.created_at < $2 AND NOT s.is_test
		AND cm.status NOT IN ('rejected', 'reversed', 'refunded') `
)

// SendCommissionDigests digests the day's partners in batches until none
// is left or ctx ends. Each batch's partners are claimed by inserting
// their digest row (ON CONFLICT DO NOTHING); only a partner claimed in
// this transaction gets the email, written to the outbox in it.
func (s *DigestService) SendCommissionDigests(ctx context.Context, day time.Time) (sent int, err error) {
	day = time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	defer wrap(&err, "postgres.SendCommissionDigests(%s)", day.Format(time.DateOnly))
	from, to := day, day.AddDate(0, 0, 1)
	for ctx.Err() == nil {
		var ids []int64
		if err := s.db.SelectContext(ctx, &ids, `
			SELECT DISTINCT cm.partner_id`+digestFrom+`WHERE`+digestWhere+`
				AND NOT EXISTS (SELECT 1 FROM commission_digests d WHERE d.partner_id = cm.partner_id AND d.day = $3)
			ORDER BY cm.partner_id LIMIT $4`, from, to, day, digestBatch); err != nil {
			return sent, err
		}
		if len(ids) == 0 {
			return sent, nil
		}
		var msgs []ledger.OutboxMessage
		now := s.db.now()
		err := s.db.Transact(ctx, func(tx *sqlx.Tx) error {
			msgs = nil
			for _, id := range ids {
				m, err := s.digestPartner(ctx, tx, id, day, now)
				if err != nil {
					return err
				}
				msgs = append(msgs, m...)
			}
			return nil
		})
		if err != nil {
			return sent, formatError(err)
		}
		s.after.send(msgs)
		sent += len(msgs)
		if len(ids) < digestBatch {
			return sent, nil
		}
	}
	return sent, ctx.Err()
}

// digestPartner claims a partner's digest of day and, when claimed here,
// writes its email. A partner whose email cannot be addressed keeps the
// claim (so no run retries it forever) and is logged.
func (s *DigestService) digestPartner(ctx context.Context, tx *sqlx.Tx, partnerID int64, day, now time.Time) ([]ledger.OutboxMessage, error) {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO commission_digests (partner_id, day, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		partnerID, day, now)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err // digested already (by an earlier or a concurrent run)
	}
	var name, email string
	if err := tx.QueryRowContext(ctx, `SELECT name, email FROM partners WHERE id = $1`, partnerID).Scan(&name, &email); err != nil {
		return nil, err
	}
	rows, err := readDigestRows(ctx, tx, partnerID, day)
	if err != nil {
		return nil, err
	}
	data, ok := ledger.PlanCommissionDigest(name, day, rows, s.baseURL+"/partner/")
	if !ok {
		return nil, nil
	}
	m, err := insertEmail(ctx, tx, email, data, now)
	if ledger.ErrorCode(err) == ledger.EInvalid {
		s.logger.Warn("commission digest not addressable", "partner_id", partnerID, "err", err)
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return []ledger.OutboxMessage{m}, nil
}

// readDigestRows reads a partner's commissions of the day per program and
// currency.
func readDigestRows(ctx context.Context, tx *sqlx.Tx, partnerID int64, day time.Time) ([]ledger.DigestRow, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT cm.program_id, p.name, cm.currency, count(*), sum(cm.amount_minor)::text
`+digestFrom+`JOIN programs p ON p.id = cm.program_id
		WHERE cm.partner_id = $3 AND`+digestWhere+`
		GROUP BY cm.program_id, p.name, cm.currency`, day, day.AddDate(0, 0, 1), partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.DigestRow
	for rows.Next() {
		var r ledger.DigestRow
		var cur, sum string
		if err := rows.Scan(&r.ProgramID, &r.ProgramName, &cur, &r.Count, &sum); err != nil {
			return nil, err
		}
		if r.SumMinor, err = decimal.NewFromString(sum); err != nil {
			return nil, err
		}
		r.Currency = ledger.Currency(cur)
		out = append(out, r)
	}
	return out, rows.Err()
}
