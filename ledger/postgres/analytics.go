package postgres

import (
	"context"
	"database/sql"
	"sort"

	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// AnalyticsService implements ledger.AnalyticsService.
type AnalyticsService struct{ db *DB }

// NewAnalyticsService returns the analytics service over db.
func NewAnalyticsService(db *DB) *AnalyticsService { return &AnalyticsService{db: db} }

var _ ledger.AnalyticsService = (*AnalyticsService)(nil)

// referrerDomain is the host of a referrer URL, lower-cased, without a
// leading "www."; NULL when the URL names none.
const referrerDomain = `NULLIF(regexp_replace(lower(substring(ev.referrer
	FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#:]+)')), '^www\.', ''), '')`

// sourcesQuery gathers the program's real events of the range, each with
// the referrer of the click that brought it (a lead's and a sale's through
// their customer's click, looked up by its primary key in its partition),
// and sums them per group and currency. Clicks, leads and sales are read
// through their (program_id, occurred_at DESC) WHERE NOT is_test indexes.
const sourcesQuery = `
	WITH ev AS (
		SELECT c.referrer_url AS referrer, c.partner_id, 1 AS clicks, 0 AS leads, 0 AS sales,
			NULL::text AS currency, 0::bigint AS amount
		FROM clicks c
		WHERE c.program_id = $1 AND NOT c.is_test AND c.occurred_at >= $2 AND c.occurred_at <= $3
		UNION ALL
		SELECT c.referrer_url, l.partner_id, 0, 1, 0, NULL, 0
		FROM leads l
		LEFT JOIN customers cu ON cu.id = l.customer_id
		LEFT JOIN clicks c ON c.click_id = cu.click_id AND c.occurred_at = cu.click_occurred_at
		WHERE l.program_id = $1 AND NOT l.is_test AND l.settled_at IS NOT NULL
			AND l.occurred_at >= $2 AND l.occurred_at <= $3
		UNION ALL
		SELECT c.referrer_url, s.partner_id, 0, 0, 1, s.currency, s.amount_cents - s.refunded_cents
		FROM sales s
		LEFT JOIN customers cu ON cu.id = s.customer_id
		LEFT JOIN clicks c ON c.click_id = cu.click_id AND c.occurred_at = cu.click_occurred_at
		WHERE s.program_id = $1 AND NOT s.is_test AND s.occurred_at >= $2 AND s.occurred_at <= $3
	)
	SELECT CASE WHEN $4 THEN ` + referrerDomain + ` END AS domain,
		CASE WHEN $5 THEN ev.partner_id END AS partner_id,
		ev.currency, sum(ev.clicks) AS clicks, sum(ev.leads) AS leads, sum(ev.sales) AS sales,
		sum(ev.amount) AS amount
	FROM ev
	GROUP BY 1, 2, 3`

type groupKey struct {
	domain  string
	partner int64 // 0: none
}

// Sources groups a program's events by referrer domain and partner.
func (s *AnalyticsService) Sources(ctx context.Context, q ledger.SourcesQuery) (rep *ledger.SourcesReport, err error) {
	defer wrap(&err, "postgres.Sources(%d)", q.ProgramID)
	rows, err := s.db.QueryContext(ctx, sourcesQuery, q.ProgramID, q.From, q.To, q.ByReferrer, q.ByPartner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	groups := map[groupKey]*ledger.SourceRow{}
	rep = &ledger.SourcesReport{Query: q, Totals: ledger.SourceRow{Revenue: map[ledger.Currency]int64{}}}
	for rows.Next() {
		var domain, currency sql.NullString
		var partner sql.NullInt64
		var clicks, leads, sales int64
		var amount minorSum
		if err := rows.Scan(&domain, &partner, &currency, &clicks, &leads, &sales, &amount); err != nil {
			return nil, err
		}
		k := groupKey{domain: domain.String, partner: partner.Int64}
		g := groups[k]
		if g == nil {
			g = &ledger.SourceRow{ReferrerDomain: domain.String, Revenue: map[ledger.Currency]int64{}}
			if partner.Valid {
				id := partner.Int64
				g.PartnerID = &id
			}
			groups[k] = g
		}
		g.Clicks += clicks
		g.Leads += leads
		g.Sales += sales
		rep.Totals.Clicks += clicks
		rep.Totals.Leads += leads
		rep.Totals.Sales += sales
		if currency.Valid {
			cur := ledger.Currency(currency.String)
			g.Revenue[cur] = ledger.AddMinor(g.Revenue[cur], int64(amount))
			rep.Totals.Revenue[cur] = ledger.AddMinor(rep.Totals.Revenue[cur], int64(amount))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rep.Groups = len(groups)
	for _, g := range groups {
		rep.Rows = append(rep.Rows, *g)
	}
	sort.Slice(rep.Rows, func(i, j int) bool {
		a, b := rep.Rows[i], rep.Rows[j]
		switch {
		case a.Clicks != b.Clicks:
			return a.Clicks > b.Clicks
		case a.Leads != b.Leads:
			return a.Leads > b.Leads
		case a.Sales != b.Sales:
			return a.Sales > b.Sales
		case a.ReferrerDomain != b.ReferrerDomain:
			return a.ReferrerDomain < b.ReferrerDomain
		}
		return partnerOrder(a.PartnerID) < partnerOrder(b.PartnerID)
	})
	if len(rep.Rows) > q.Limit {
		rep.Rows = rep.Rows[:q.Limit]
	}
	return rep, s.partnerNames(ctx, rep.Rows)
}

func partnerOrder(id *int64) int64 {
	if id == nil {
		return 0
	}
	return *id
}

// partnerNames fills in the names of the rows' partners.
func (s *AnalyticsService) partnerNames(ctx context.Context, rows []ledger.SourceRow) error {
	var ids []int64
	for _, r := range rows {
		if r.PartnerID != nil {
			ids = append(ids, *r.PartnerID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var names []struct {
		ID   int64  `db:"id"`
		Name string `db:"name"`
	}
	if err := s.db.SelectContext(ctx, &names, `SELECT id, name FROM partners WHERE id = ANY($1)`, pq.Array(ids)); err != nil {
		return err
	}
	byID := make(map[int64]string, len(names))
	for _, n := range names {
		byID[n.ID] = n.Name
	}
	for i := range rows {
		if rows[i].PartnerID != nil {
			rows[i].PartnerName = byID[*rows[i].PartnerID]
		}
	}
	return nil
}
