package web

import (
	"encoding/json"
	"sort"

	"github.com/gofiber/fiber/v2"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// brandOverview is GET /app/programs/:id: the readiness checklist, the
// program's numbers per day over 7, 30 or 90 days with their totals and
// trends, and its top partners and links.
func (p *Pages) brandOverview(c *fiber.Ctx) error {
	prog, nav, err := p.brandProgram(c, "overview")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	period := periodOf(c)
	params := func(groupBy apiclient.TrackingPerformanceParamsGroupBy) *apiclient.TrackingPerformanceParams {
		q := &apiclient.TrackingPerformanceParams{Period: apiclient.Ptr(apiclient.TrackingPerformanceParamsPeriod(period))}
		if groupBy != "" {
			q.GroupBy, q.Limit = &groupBy, apiclient.Ptr(topRows)
		}
		return q
	}
	// The four reads are independent: made at once, the page waits for
	// the slowest rather than for their sum.
	var (
		days, partners, links *apiclient.TrackingPerformanceResponse
		ready                 *apiclient.GetProgramReadinessResponse
		g                     errgroup.Group
	)
	g.Go(func() (err error) {
		days, err = p.api.TrackingPerformanceWithResponse(ctx, nav.ID, params(""), auth)
		return apiCheck(days, err)
	})
	g.Go(func() (err error) {
		partners, err = p.api.TrackingPerformanceWithResponse(ctx, nav.ID, params(apiclient.TrackingPerformanceParamsGroupByPartner), auth)
		return apiCheck(partners, err)
	})
	g.Go(func() (err error) {
		links, err = p.api.TrackingPerformanceWithResponse(ctx, nav.ID, params(apiclient.TrackingPerformanceParamsGroupByLink), auth)
		return apiCheck(links, err)
	})
	// The checklist is the one read with a low limit (30 a minute): when
	// the API refuses it, the page shows its numbers and says why the
	// checklist is missing.
	var readinessProblem string
	g.Go(func() (err error) {
		ready, err = p.api.GetProgramReadinessWithResponse(ctx, nav.ID, auth)
		err = apiCheck(ready, err)
		if re, ok := asResponseError(err); ok && re.Status == fiber.StatusTooManyRequests {
			ready, readinessProblem = nil, "The readiness checklist is not shown: "+re.Message
			return nil
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return err
	}
	perf := days.JSON200
	if perf.Metrics == nil {
		perf.Metrics = &apiclient.PerformanceMetrics{}
	}
	cur := string(perf.Meta.Currency)
	activity, revenue := overviewCharts(perf, cur)
	return p.render(c, fiber.StatusOK, "brand_overview", view{Title: prog.Name, Program: nav, Data: map[string]any{
		"Program": prog, "Period": period, "Periods": overviewPeriods, "PeriodName": periodName(period), "Currency": cur,
		"From": perf.Meta.DateFrom.Time, "To": perf.Meta.DateTo.Time,
		"Metrics": perf.Metrics, "Revenue": byCurrency(perf.Metrics.RevenueByCurrency, perf.Metrics.Revenue, cur),
		"Commission": byCurrency(perf.Metrics.CommissionByCurrency, perf.Metrics.Commission, cur),
		"Activity":   activity, "RevenueChart": revenue,
		"Readiness":        newReadinessView(ready),
		"ReadinessProblem": readinessProblem,
		"TopPartners":      partners.JSON200.Data, "TopLinks": topLinks(links.JSON200.Data, partners.JSON200.Data),
	}})
}

// overviewPeriods are the windows the overview offers.
var overviewPeriods = []tab{{"7d", "", "7 days"}, {"30d", "", "30 days"}, {"90d", "", "90 days"}}

func periodName(key string) string {
	for _, t := range overviewPeriods {
		if t.Key == key {
			return t.Label
		}
	}
	return key
}

// topRows is how many partners and links the overview ranks.
const topRows = 5

// overviewCharts draws the program's clicks, leads and conversions per
// day, and its revenue per day in the program's currency (sales in other
// currencies are not converted, so they are not on it).
func overviewCharts(r *apiclient.PerformanceResponse, cur string) (chart, chart) {
	activity := chart{ID: "activity", Title: "Clicks, leads and conversions per day"}
	revenue := chart{ID: "revenue", Title: "Revenue per day in " + cur}
	clicks := series{Name: "Clicks", Class: "s1"}
	leads := series{Name: "Leads", Class: "s2"}
	conv := series{Name: "Conversions", Class: "s3"}
	money := series{Name: "Revenue (" + cur + ")", Class: "s4"}
	for _, d := range r.Data {
		label := ""
		if d.Date != nil {
			label = d.Date.Time.Format("2 Jan")
		}
		activity.Labels = append(activity.Labels, label)
		revenue.Labels = append(revenue.Labels, label)
		clicks.Values = append(clicks.Values, decimal.NewFromInt(d.Clicks))
		leads.Values = append(leads.Values, decimal.NewFromInt(d.Leads))
		conv.Values = append(conv.Values, decimal.NewFromInt(d.Conversions))
		money.Values = append(money.Values, exact(d.Revenue))
	}
	activity.Series = []series{clicks, leads, conv}
	revenue.Series = []series{money}
	return activity, revenue
}

// exact reads an API amount as a decimal (zero if it is not one).
func exact(n json.Number) decimal.Decimal {
	d, err := decimal.NewFromString(n.String())
	if err != nil {
		return decimal.Zero
	}
	return d
}

// moneyIn is an amount in one currency.
type moneyIn struct {
	Currency string
	Amount   json.Number
	Own      bool // the program's currency (the one the trend is about)
}

// byCurrency lists amounts per currency, the program's first and the
// others in alphabetical order: sums in different currencies are shown
// side by side, never added up. The program's currency is always listed,
// with own when the map has no entry for it.
func byCurrency(m map[string]json.Number, own json.Number, cur string) []moneyIn {
	out := []moneyIn{{Currency: cur, Amount: own, Own: true}}
	others := make([]string, 0, len(m))
	for c := range m {
		if c != cur {
			others = append(others, c)
		}
	}
	sort.Strings(others)
	for _, c := range others {
		out = append(out, moneyIn{Currency: c, Amount: m[c]})
	}
	return out
}

// linkRow is a top link with its partner's name when the top partners
// name it (the ranking answers only the partner's id; no extra call).
type linkRow struct {
	apiclient.PerformanceRow
	PartnerName string
}

func topLinks(links, partners []apiclient.PerformanceRow) []linkRow {
	names := map[int64]string{}
	for _, p := range partners {
		if p.Id != nil && p.Name != nil {
			names[*p.Id] = *p.Name
		}
	}
	out := make([]linkRow, len(links))
	for i, l := range links {
		out[i] = linkRow{PerformanceRow: l}
		if l.PartnerId != nil {
			out[i].PartnerName = names[*l.PartnerId]
		}
	}
	return out
}
