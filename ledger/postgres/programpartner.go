package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// ProgramPartnerService implements ledger.ProgramPartnerService: the
// brand's view of a program's partners, counted from the raw tables, and
// its changes of them.
type ProgramPartnerService struct {
	db    *DB
	after *afterCommit
}

// NewProgramPartnerService returns the partner listing over db. relay
// sends the webhooks of a change after its commit (nil: the outbox sweep
// sends them).
func NewProgramPartnerService(db *DB, relay ledger.OutboxRelay, logger *slog.Logger) *ProgramPartnerService {
	return &ProgramPartnerService{db: db, after: newAfterCommit(relay, logger)}
}

// WaitRelays blocks until the relays started after commits have finished.
func (s *ProgramPartnerService) WaitRelays() { s.after.wait() }

var _ ledger.ProgramPartnerService = (*ProgramPartnerService)(nil)

// partnerFilter is the WHERE of the partners a query matches (the program's
// enrollments of real partners, the status and the search) with its
// arguments; $1 is the program.
func partnerFilter(q ledger.ProgramPartnerQuery) (string, []any) {
	where := []string{"e.program_id = $1", "NOT p.is_test"}
	args := []any{q.ProgramID}
	if q.Status != "" {
		args = append(args, q.Status)
		where = append(where, fmt.Sprintf("e.status = $%d", len(args)))
	}
	if q.GroupID != 0 {
		// A group of another program matches nothing: the program's
		// enrollments are never in it.
		args = append(args, q.GroupID)
		where = append(where, fmt.Sprintf("e.group_id = $%d", len(args)))
	}
	if q.Search != "" {
		// strpos, not LIKE: the search is a plain substring, and % or _
		// in it mean themselves.
		args = append(args, q.Search)
		where = append(where, fmt.Sprintf("(strpos(lower(p.name), $%[1]d) > 0 OR strpos(p.email, $%[1]d) > 0)", len(args)))
	}
	return strings.Join(where, " AND "), args
}

// partnerCounts are the columns of one listed partner: its counts and money
// in the program, each a subquery limited to the page's partner. Clicks
// and settled leads come from the daily rollups (issue 25, which count
// each real event once; rollup_traffic_daily_partner_idx), since counting
// a partner's raw clicks takes seconds on millions of them; the money
// through the per-partner indexes (sales_partner_id_idx, commissions_partner_id_idx,
// balance_entries_program_idx). The balance is the partner's approved
// balance in this program and its currency, the sum of the entries that
// name the program (credits, refund deductions, payouts and their
// returns: the definition the due list reads; a payout also never takes
// more than the partner's whole account holds, see programBalance), so a
// brand never sees money the partner earned in another workspace's
// program. Sums are sent
// as text, so they are read exactly: minor units never pass through a
// float.
const partnerCounts = `
	(SELECT COALESCE(sum(r.clicks), 0) FROM rollup_traffic_daily r
		WHERE r.program_id = $1 AND r.partner_id = pg.partner_id) AS clicks,
	(SELECT COALESCE(sum(r.leads), 0) FROM rollup_traffic_daily r
		WHERE r.program_id = $1 AND r.partner_id = pg.partner_id) AS leads,
	(SELECT COALESCE(jsonb_agg(jsonb_build_array(x.currency, x.n::text, x.total::text)), '[]')
		FROM (SELECT s.currency, count(*) AS n, sum(s.amount_cents - s.refunded_cents) AS total
			FROM sales s WHERE s.partner_id = pg.partner_id AND s.program_id = $1 AND NOT s.is_test
			GROUP BY s.currency) x) AS sales,
	(SELECT COALESCE(jsonb_agg(jsonb_build_array(x.currency, x.status, x.total::text)), '[]')
		FROM (SELECT cm.currency, cm.status, sum(cm.amount_minor) AS total
			FROM commissions cm
			WHERE cm.partner_id = pg.partner_id AND cm.program_id = $1
				AND cm.status IN ('pending', 'approved', 'paid')
			GROUP BY cm.currency, cm.status) x) AS commissions,
	(SELECT COALESCE(sum(b.amount_minor), 0) FROM balance_entries b
		WHERE b.program_id = $1 AND b.partner_id = pg.partner_id AND b.currency = prog.currency) AS balance`

// partnerRow is one row of the listing's query; PartnerID is NULL on the
// single row of an empty page (which still carries the total).
type partnerRow struct {
	Total       int64
	PartnerID   sql.NullInt64
	Name        sql.NullString
	Email       sql.NullString
	Status      sql.NullString
	JoinedAt    sql.NullTime
	Currency    string
	GroupID     sql.NullInt64
	GroupName   sql.NullString
	Clicks      int64
	Leads       int64
	Sales       []byte
	Commissions []byte
	Balance     minorSum
}

func (r *partnerRow) scan(rows *sql.Rows) error {
	return rows.Scan(&r.Total, &r.PartnerID, &r.Name, &r.Email, &r.Status, &r.JoinedAt, &r.Currency,
		&r.GroupID, &r.GroupName, &r.Clicks, &r.Leads, &r.Sales, &r.Commissions, &r.Balance)
}

// partner converts the row, reading the per-currency sums exactly.
func (r *partnerRow) partner() (ledger.ProgramPartner, error) {
	p := ledger.ProgramPartner{
		PartnerID: r.PartnerID.Int64, Name: r.Name.String, Email: r.Email.String, Status: r.Status.String,
		JoinedAt: r.JoinedAt.Time.UTC(), Currency: ledger.Currency(r.Currency),
		GroupID: r.GroupID.Int64, GroupName: r.GroupName.String,
		Clicks: r.Clicks, Leads: r.Leads, Balance: int64(r.Balance),
		Revenue: map[ledger.Currency]int64{}, Commissions: map[ledger.Currency]ledger.CommissionTotals{},
	}
	var sales, commissions [][3]string
	if err := json.Unmarshal(r.Sales, &sales); err != nil {
		return p, err
	}
	if err := json.Unmarshal(r.Commissions, &commissions); err != nil {
		return p, err
	}
	for _, s := range sales {
		n, err := decimal.NewFromString(s[1])
		if err != nil {
			return p, err
		}
		total, err := decimal.NewFromString(s[2])
		if err != nil {
			return p, err
		}
		p.Conversions += n.IntPart()
		p.Revenue[ledger.Currency(s[0])] = ledger.ClampMinor(total)
	}
	for _, c := range commissions {
		total, err := decimal.NewFromString(c[2])
		if err != nil {
			return p, err
		}
		cur := ledger.Currency(c[0])
		t := p.Commissions[cur]
		switch c[1] {
		case ledger.CommissionPending:
			t.Pending = ledger.ClampMinor(total)
		case ledger.CommissionApproved:
			t.Approved = ledger.ClampMinor(total)
		case ledger.CommissionPaid:
			t.Paid = ledger.ClampMinor(total)
		}
		p.Commissions[cur] = t
	}
	return p, nil
}

// ProgramPartners reads the page and the total in one query: the page is
// cut from the matching enrollments in the listing's order (walking
// enrollments_program_listing_idx, migration 00013, rather than sorting
// them all), the matching enrollments are counted apart, and only the
// page's partners get their counts. An empty page still returns one row,
// with the total.
func (s *ProgramPartnerService) ProgramPartners(ctx context.Context, q ledger.ProgramPartnerQuery) (page *ledger.ProgramPartnerPage, err error) {
	defer wrap(&err, "postgres.ProgramPartners(%d)", q.ProgramID)
	where, args := partnerFilter(q)
	args = append(args, q.PageSize, q.Offset())
	rows, err := s.db.QueryContext(ctx, `
		WITH pg AS (
			SELECT e.partner_id, e.status, e.created_at, p.name, p.email, e.group_id
			FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE `+where+`
			ORDER BY e.created_at DESC, e.partner_id DESC
			LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args))+`
		), total AS (
			SELECT count(*) AS n
			FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE `+where+`
		)
		SELECT total.n, pg.partner_id, pg.name, pg.email, pg.status, pg.created_at, prog.currency, pg.group_id,
			(SELECT name FROM partner_groups WHERE id = pg.group_id) AS group_name,`+partnerCounts+`
		FROM total
		JOIN programs prog ON prog.id = $1
		LEFT JOIN pg ON true
		ORDER BY pg.created_at DESC, pg.partner_id DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	page = &ledger.ProgramPartnerPage{Page: q.Page, PageSize: q.PageSize, Partners: []ledger.ProgramPartner{}}
	for rows.Next() {
		var r partnerRow
		if err := r.scan(rows); err != nil {
			return nil, err
		}
		page.Total = r.Total
		if !r.PartnerID.Valid {
			continue
		}
		p, err := r.partner()
		if err != nil {
			return nil, err
		}
		page.Partners = append(page.Partners, p)
	}
	return page, rows.Err()
}

// ProgramPartnerBatch reads the next ledger.PartnerExportBatch partners
// after after (nil: from the start) with a query of the listing's shape
// that starts past the previous batch (keyset on created_at, partner_id),
// so no batch rereads what came before.
func (s *ProgramPartnerService) ProgramPartnerBatch(ctx context.Context, q ledger.ProgramPartnerQuery, after *ledger.ProgramPartner) (out []ledger.ProgramPartner, err error) {
	defer wrap(&err, "postgres.ProgramPartnerBatch(%d)", q.ProgramID)
	where, args := partnerFilter(q)
	if after != nil {
		args = append(args, after.JoinedAt, after.PartnerID)
		where += fmt.Sprintf(" AND (e.created_at, e.partner_id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, ledger.PartnerExportBatch)
	rows, err := s.db.QueryContext(ctx, `
		WITH pg AS (
			SELECT e.partner_id, e.status, e.created_at, p.name, p.email, e.group_id
			FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE `+where+`
			ORDER BY e.created_at DESC, e.partner_id DESC
			LIMIT $`+fmt.Sprint(len(args))+`
		)
		SELECT 0::bigint, pg.partner_id, pg.name, pg.email, pg.status, pg.created_at, prog.currency, pg.group_id,
			(SELECT name FROM partner_groups WHERE id = pg.group_id) AS group_name,`+partnerCounts+`
		FROM pg
		JOIN programs prog ON prog.id = $1
		ORDER BY pg.created_at DESC, pg.partner_id DESC`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []ledger.ProgramPartner{}
	for rows.Next() {
		var r partnerRow
		if err := r.scan(rows); err != nil {
			return nil, err
		}
		p, err := r.partner()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ProgramPartner reads one enrolled partner (one query of the listing's
// shape) and its links in the program. The synthetic test partner is not
// found, as it is never listed.
func (s *ProgramPartnerService) ProgramPartner(ctx context.Context, programID, partnerID int64) (d *ledger.ProgramPartnerDetail, err error) {
	defer wrap(&err, "postgres.ProgramPartner(%d, %d)", programID, partnerID)
	rows, err := s.db.QueryContext(ctx, `
		WITH pg AS (
			SELECT e.partner_id, e.status, e.created_at, p.name, p.email, e.group_id
			FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE e.program_id = $1 AND e.partner_id = $2 AND NOT p.is_test
		)
		SELECT 0::bigint, pg.partner_id, pg.name, pg.email, pg.status, pg.created_at, prog.currency, pg.group_id,
			(SELECT name FROM partner_groups WHERE id = pg.group_id) AS group_name,`+partnerCounts+`
		FROM pg
		JOIN programs prog ON prog.id = $1`, programID, partnerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, notFound("partner")
	}
	var r partnerRow
	if err := r.scan(rows); err != nil {
		return nil, err
	}
	p, err := r.partner()
	if err != nil {
		return nil, err
	}
	rows.Close()
	d = &ledger.ProgramPartnerDetail{ProgramPartner: p, Links: []ledger.Link{}}
	links, err := s.db.QueryContext(ctx, `
		SELECT id, code, active, created_at, updated_at FROM links
		WHERE partner_id = $2 AND program_id = $1 AND NOT is_test
		ORDER BY id`, programID, partnerID)
	if err != nil {
		return nil, err
	}
	defer links.Close()
	for links.Next() {
		l := ledger.Link{ProgramID: &programID, PartnerID: &partnerID}
		var created, updated time.Time
		if err := links.Scan(&l.ID, &l.Code, &l.Active, &created, &updated); err != nil {
			return nil, err
		}
		l.CreatedAt, l.UpdatedAt = created.UTC(), updated.UTC()
		d.Links = append(d.Links, l)
	}
	return d, links.Err()
}

// ChangePartner locks the partner's enrollment in the program and applies
// the change: a new status and/or group, each with its audit entry, and
// for a new status the webhook (partner.suspended, or partner.enrolled
// when it is active again) in the same transaction. It returns the
// partner's link codes in the program, which the caller drops from every
// edge's cache once committed: the click path reads the enrollment with
// the link (TrafficStore.ReferralLink).
func (s *ProgramPartnerService) ChangePartner(ctx context.Context, programID, partnerID, actorID int64, ch ledger.PartnerChange) (out *ledger.PartnerChanged, err error) {
	defer wrap(&err, "postgres.ChangePartner(%d, %d)", programID, partnerID)
	now := s.db.now()
	var msgs []ledger.OutboxMessage
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		msgs, out = nil, &ledger.PartnerChanged{}
		var cur struct {
			Status   string    `db:"status"`
			GroupID  int64     `db:"group_id"`
			Name     string    `db:"name"`
			Email    string    `db:"email"`
			JoinedAt time.Time `db:"created_at"`
		}
		err := tx.GetContext(ctx, &cur, `
			SELECT e.status, e.group_id, p.name, p.email, e.created_at
			FROM enrollments e JOIN partners p ON p.id = e.partner_id
			WHERE e.program_id = $1 AND e.partner_id = $2 AND NOT p.is_test
			FOR NO KEY UPDATE OF e`, programID, partnerID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("partner")
		} else if err != nil {
			return err
		}
		if cur.Status == ledger.EnrollmentRemoved {
			return ledger.NewError(ledger.EConflict, ledger.MsgPartnerRemoved)
		}
		status, group := cur.Status, cur.GroupID
		if ch.Status != "" {
			status = ch.Status
		}
		if ch.GroupID != 0 && ch.GroupID != cur.GroupID {
			var ok bool
			if err := tx.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM partner_groups WHERE id = $1 AND program_id = $2)`,
				ch.GroupID, programID); err != nil {
				return err
			}
			if !ok {
				return ledger.NewError(ledger.EInvalid, ledger.MsgPartnerGroupID)
			}
			group = ch.GroupID
		}
		if status == cur.Status && group == cur.GroupID {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE enrollments SET status = $3, group_id = $4 WHERE program_id = $1 AND partner_id = $2`,
			programID, partnerID, status, group); err != nil {
			return err
		}
		if group != cur.GroupID {
			if err := insertAudit(ctx, tx, ledger.AuditEntry{
				ProgramID: programID, ActorUserID: actorID, Action: "partner.group_changed", SubjectType: "partner",
				SubjectID: partnerID, Details: map[string]any{"from": cur.GroupID, "to": group},
			}, now); err != nil {
				return err
			}
		}
		if status == cur.Status {
			return nil
		}
		out.StatusChanged = true
		action, event := "partner.suspended", ledger.EventPartnerSuspended
		if status == ledger.EnrollmentActive {
			action, event = "partner.reactivated", ledger.EventPartnerEnrolled
		}
		if err := insertAudit(ctx, tx, ledger.AuditEntry{
			ProgramID: programID, ActorUserID: actorID, Action: action, SubjectType: "partner",
			SubjectID: partnerID, Details: map[string]any{"from": cur.Status, "to": status},
		}, now); err != nil {
			return err
		}
		if msgs, err = brandEvent(ctx, tx, programID, event, ledger.PartnerEventData{
			PartnerID: partnerID, ProgramID: programID, Name: cur.Name, Email: cur.Email, Status: status,
			GroupID: group, JoinedAt: ledger.FormatTime(cur.JoinedAt),
		}, now); err != nil {
			return err
		}
		return tx.SelectContext(ctx, &out.LinkCodes, `SELECT code FROM links WHERE program_id = $1 AND partner_id = $2 ORDER BY id`,
			programID, partnerID)
	})
	if err != nil {
		return nil, err
	}
	s.after.send(msgs)
	return out, nil
}
