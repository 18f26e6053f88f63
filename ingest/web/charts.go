package web

import (
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// partnerChart draws a partner's clicks, leads and conversions per day.
func partnerChart(r *apiclient.PartnerStatsReport) chart {
	c := chart{ID: "stats", Title: "Clicks, leads and conversions per day"}
	clicks := series{Name: "Clicks", Class: "s1"}
	leads := series{Name: "Leads", Class: "s2"}
	conv := series{Name: "Conversions", Class: "s3"}
	for _, d := range r.Data.Days {
		c.Labels = append(c.Labels, d.Date.Time.Format("2 Jan"))
		clicks.Values = append(clicks.Values, decimal.NewFromInt(int64(d.Clicks)))
		leads.Values = append(leads.Values, decimal.NewFromInt(int64(d.Leads)))
		conv.Values = append(conv.Values, decimal.NewFromInt(int64(d.Conversions)))
	}
	c.Series = []series{clicks, leads, conv}
	return c
}
