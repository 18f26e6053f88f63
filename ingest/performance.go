package ingest

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// trackingPerformance is GET /api/tracking/performance/:programId (any
// member, tracking:list, like the event listing): the program's numbers
// per day of a window of its days, their totals, rates and trends
// against the previous window, from the rollups; with groupBy the same
// numbers per partner or link (top limit).
func (s *Server) trackingPerformance(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "programId", ledger.PermTrackingList, msgNoTrackingList)
	if err != nil {
		return err
	}
	q, err := ledger.PerformanceQueryInput{
		Period:   queryString(c, "period"),
		DateFrom: queryString(c, "dateFrom"),
		DateTo:   queryString(c, "dateTo"),
		GroupBy:  queryString(c, "groupBy"),
		Limit:    queryInt(c, "limit"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	r, err := s.svc.Performance.Performance(c.UserContext(), q)
	if err != nil {
		return err
	}
	meta := fiber.Map{
		"period":         r.Query.Period,
		"dateFrom":       ledger.FormatDate(r.Window.From),
		"dateTo":         ledger.FormatDate(r.Window.To),
		"previousPeriod": nil,
		"currency":       string(r.Currency),
	}
	if r.Window.HasPrevious {
		meta["previousPeriod"] = fiber.Map{"dateFrom": ledger.FormatDate(r.Window.PrevFrom), "dateTo": ledger.FormatDate(r.Window.PrevTo)}
	}
	if q.GroupBy != "" {
		meta["groupBy"], meta["limit"] = q.GroupBy, q.Limit
		data := make([]fiber.Map, len(r.Groups))
		for i := range r.Groups {
			data[i] = performanceGroupJSON(&r.Groups[i], r.Currency, q.GroupBy)
		}
		return c.JSON(fiber.Map{"data": data, "meta": meta})
	}
	data := make([]fiber.Map, len(r.Days))
	for i := range r.Days {
		d := &r.Days[i]
		m := performanceNumbersJSON(&d.PerformanceNumbers, r.Currency)
		m["date"] = ledger.FormatDate(d.Date)
		m["partners"] = d.Partners
		data[i] = m
	}
	metrics := performanceNumbersJSON(&r.Total, r.Currency)
	metrics["partners"] = r.Total.Partners
	metrics["conversionRate"] = decimalJSON(ledger.ConversionRate(r.Total.Conversions(), r.Total.Clicks).String())
	metrics["averageOrderValue"] = decimalJSON(ledger.AverageOrderValue(r.Total.Sales[r.Currency], r.Currency).String())
	cur, prev, has := &r.Total, &r.Previous, r.Window.HasPrevious
	own, prevOwn := cur.Sales[r.Currency], prev.Sales[r.Currency]
	metrics["clicksTrend"] = trendJSON(ledger.NewTrend(cur.Clicks, prev.Clicks, has))
	metrics["leadsTrend"] = trendJSON(ledger.NewTrend(cur.Leads, prev.Leads, has))
	metrics["conversionsTrend"] = trendJSON(ledger.NewTrend(cur.Conversions(), prev.Conversions(), has))
	metrics["revenueTrend"] = trendJSON(ledger.NewTrend(own.Revenue, prevOwn.Revenue, has))
	metrics["commissionTrend"] = trendJSON(ledger.NewTrend(own.Commission, prevOwn.Commission, has))
	return c.JSON(fiber.Map{"data": data, "metrics": metrics, "meta": meta})
}

// performanceNumbersJSON renders the counters shared by days, metrics and
// groups. revenue, commission and refundedAmount are in the program's
// currency (major units, exact); revenueByCurrency and
// commissionByCurrency hold every currency with a conversion, revenue or
// commission in the scope, refundedAmountByCurrency every currency with a
// refund in it, the program's included. refunds counts every currency's
// refunds, as conversions does.
func performanceNumbersJSON(n *ledger.PerformanceNumbers, cur ledger.Currency) fiber.Map {
	revenue, commission, refunded := fiber.Map{}, fiber.Map{}, fiber.Map{}
	for c, s := range n.Sales {
		if s.Refunds != 0 || s.Refunded != 0 {
			refunded[string(c)] = moneyJSON(s.Refunded, c)
		}
		if s.Conversions == 0 && s.Revenue == 0 && s.Commission == 0 {
			continue
		}
		revenue[string(c)] = moneyJSON(s.Revenue, c)
		commission[string(c)] = moneyJSON(s.Commission, c)
	}
	own := n.Sales[cur]
	return fiber.Map{
		"clicks":                   n.Clicks,
		"visitors":                 n.Visitors,
		"leads":                    n.Leads,
		"conversions":              n.Conversions(),
		"revenue":                  moneyJSON(own.Revenue, cur),
		"revenueByCurrency":        revenue,
		"commission":               moneyJSON(own.Commission, cur),
		"commissionByCurrency":     commission,
		"refunds":                  n.Refunds(),
		"refundedAmount":           moneyJSON(own.Refunded, cur),
		"refundedAmountByCurrency": refunded,
	}
}

// performanceGroupJSON renders a partner's or link's numbers over the
// window, with its rates.
func performanceGroupJSON(g *ledger.PerformanceGroup, cur ledger.Currency, groupBy string) fiber.Map {
	m := performanceNumbersJSON(&g.PerformanceNumbers, cur)
	m["id"] = g.ID
	if groupBy == ledger.GroupByPartner {
		m["name"], m["email"] = g.Name, g.Email
	} else {
		m["code"], m["partnerId"] = g.Code, g.PartnerID
	}
	m["conversionRate"] = decimalJSON(ledger.ConversionRate(g.Conversions(), g.Clicks).String())
	m["averageOrderValue"] = decimalJSON(ledger.AverageOrderValue(g.Sales[cur], cur).String())
	return m
}

// trendJSON renders a trend: a percent (null when it has none) and its
// direction.
func trendJSON(t ledger.Trend) fiber.Map {
	var pct any
	if t.Percent != nil {
		pct = json.Number(t.Percent.String())
	}
	return fiber.Map{"trend": pct, "trendDirection": t.Direction}
}
