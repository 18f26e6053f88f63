package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// PartnerStats reads the partner's enrollment and the program's facts
// (currency, today and the partner's first day in the program's
// timezone), resolves the window, then reads the partner's rollup rows of
// the window in one more query: a range of each rollup's primary key
// (program, day) filtered to the partner.
func (s *PortalService) PartnerStats(ctx context.Context, partnerID int64, q ledger.PerformanceQuery) (st *ledger.PartnerStats, err error) {
	defer wrap(&err, "postgres.PartnerStats(%d, %d)", partnerID, q.ProgramID)
	var (
		currency      string
		joined, today time.Time
		firstT, first sql.NullTime
	)
	err = s.db.QueryRowContext(ctx, `
		SELECT p.currency, (e.created_at AT TIME ZONE p.timezone)::date, ($3::timestamptz AT TIME ZONE p.timezone)::date,
			(SELECT min(day) FROM rollup_traffic_daily WHERE program_id = p.id AND partner_id = $2),
			(SELECT min(day) FROM rollup_sales_daily WHERE program_id = p.id AND partner_id = $2)
		FROM enrollments e JOIN programs p ON p.id = e.program_id
		WHERE e.program_id = $1 AND e.partner_id = $2`, q.ProgramID, partnerID, s.now()).Scan(&currency, &joined, &today, &firstT, &first)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.ENotFound, ledger.MsgPortalProgramNotFound)
	} else if err != nil {
		return nil, err
	}
	start := joined
	if firstT.Valid || first.Valid {
		start = earliestValid(firstT, first)
	}
	st = &ledger.PartnerStats{Query: q, Currency: ledger.Currency(currency)}
	st.Window = q.Window(dateOf(today), dateOf(start))
	w := st.Window
	st.Days = make([]ledger.PerformanceDay, ledger.DaysBetween(w.From, w.To))
	for i := range st.Days {
		st.Days[i].Date = w.From.Add(time.Duration(i) * 24 * time.Hour)
		st.Days[i].Sales = map[ledger.Currency]ledger.SalesNumbers{}
	}
	st.Total.Sales = map[ledger.Currency]ledger.SalesNumbers{}
	rows, err := s.db.QueryContext(ctx, `
		SELECT 't' AS kind, day, '' AS currency, sum(clicks)::numeric AS a, sum(leads)::numeric AS b
			FROM rollup_traffic_daily WHERE program_id = $1 AND partner_id = $2 AND day BETWEEN $3 AND $4 GROUP BY day
		UNION ALL
		SELECT 's', day, currency, sum(conversions), sum(commission_minor)
			FROM rollup_sales_daily WHERE program_id = $1 AND partner_id = $2 AND day BETWEEN $3 AND $4
			GROUP BY day, currency`, q.ProgramID, partnerID, w.From, w.To)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			kind, cur string
			d         time.Time
			a, b      minorSum
		)
		if err := rows.Scan(&kind, &d, &cur, &a, &b); err != nil {
			return nil, err
		}
		dayNums := &st.Days[ledger.DaysBetween(w.From, dateOf(d))-1].PerformanceNumbers
		for _, nums := range []*ledger.PerformanceNumbers{&st.Total, dayNums} {
			if kind == "t" {
				nums.Clicks += int64(a)
				nums.Leads += int64(b)
				continue
			}
			nums.AddSales(ledger.Currency(cur), ledger.SalesNumbers{Conversions: int64(a), Commission: int64(b)})
		}
	}
	return st, rows.Err()
}
