package ledger

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// Performance: a program's clicks, visitors, leads, conversions, revenue,
// commission and refunds per day of a window of the program's days, with totals
// and the trends against the previous window of equal length, or the same
// numbers per partner or per link. Everything is read from the daily
// rollups (migration 00016), never from the raw tables.

// Periods of the performance query; a window given by dateFrom and dateTo
// is PeriodCustom.
const (
	Period7d     = "7d"
	Period30d    = "30d"
	Period90d    = "90d"
	PeriodAll    = "all"
	PeriodCustom = "custom"
)

// Groupings of the performance query.
const (
	GroupByPartner = "partner"
	GroupByLink    = "link"
)

// Bounds of a performance query.
const (
	DefaultPerformanceLimit = 10
	MaxPerformanceLimit     = 100
	// MaxPerformanceDays bounds a dateFrom/dateTo window: a year, leap
	// day included. `all` is not bounded.
	MaxPerformanceDays = 366
)

// Trend directions.
const (
	TrendUp      = "up"
	TrendDown    = "down"
	TrendNeutral = "neutral"
)

// Messages of the performance query parameters.
const (
	MsgPerfPeriod    = "period must be one of: 7d, 30d, 90d, all"
	MsgPerfDateFrom  = "dateFrom must be a date (YYYY-MM-DD)"
	MsgPerfDateTo    = "dateTo must be a date (YYYY-MM-DD)"
	MsgPerfDatePair  = "dateFrom and dateTo must be given together"
	MsgPerfDateOrder = "dateFrom must not be later than dateTo"
	MsgPerfRange     = "the range from dateFrom to dateTo must not exceed 366 days"
	MsgPerfGroupBy   = "groupBy must be one of: partner, link"
	MsgPerfLimit     = "limit must be an integer from 1 to 100"
)

// dateLayout is how a program day is written.
const dateLayout = "2006-01-02"

// day is 24 hours; program days are dates, kept as UTC midnights, so
// adding days is exact whatever the program's timezone.
const day = 24 * time.Hour

// PerformanceQueryInput is the query string as sent (an empty parameter
// is absent).
type PerformanceQueryInput struct {
	Period   Input[string]
	DateFrom Input[string]
	DateTo   Input[string]
	GroupBy  Input[string]
	Limit    Input[int64]
}

// PerformanceQuery is a validated performance query.
type PerformanceQuery struct {
	ProgramID int64
	Period    string    // one of the Period constants
	From, To  time.Time // PeriodCustom only: the program's dates, inclusive (UTC midnights)
	GroupBy   string    // "", GroupByPartner or GroupByLink
	Limit     int       // groups answered (GroupBy only)
}

// Validate checks the query in parameter order and applies the defaults:
// period 7d, limit 10. dateFrom and dateTo come together and replace the
// period (which is still checked when sent). Errors: EInvalid.
func (in PerformanceQueryInput) Validate(programID int64) (PerformanceQuery, error) {
	q := PerformanceQuery{ProgramID: programID, Period: Period7d, Limit: DefaultPerformanceLimit}
	if in.Period.Present {
		switch p := in.Period.Value; {
		case !in.Period.Bad && (p == Period7d || p == Period30d || p == Period90d || p == PeriodAll):
			q.Period = p
		default:
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfPeriod)
		}
	}
	var err error
	if in.DateFrom.Present {
		if q.From, err = time.Parse(dateLayout, in.DateFrom.Value); in.DateFrom.Bad || err != nil {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfDateFrom)
		}
	}
	if in.DateTo.Present {
		if q.To, err = time.Parse(dateLayout, in.DateTo.Value); in.DateTo.Bad || err != nil {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfDateTo)
		}
	}
	if in.DateFrom.Present != in.DateTo.Present {
		return PerformanceQuery{}, NewError(EInvalid, MsgPerfDatePair)
	}
	if in.DateFrom.Present {
		if q.From.After(q.To) {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfDateOrder)
		}
		if DaysBetween(q.From, q.To) > MaxPerformanceDays {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfRange)
		}
		q.Period = PeriodCustom
	}
	if in.GroupBy.Present {
		if g := in.GroupBy.Value; in.GroupBy.Bad || (g != GroupByPartner && g != GroupByLink) {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfGroupBy)
		}
		q.GroupBy = in.GroupBy.Value
	}
	if in.Limit.Present {
		if in.Limit.Bad || in.Limit.Value < 1 || in.Limit.Value > MaxPerformanceLimit {
			return PerformanceQuery{}, NewError(EInvalid, MsgPerfLimit)
		}
		q.Limit = int(in.Limit.Value)
	}
	return q, nil
}

// DaysBetween is the number of days from from to to, both included.
func DaysBetween(from, to time.Time) int {
	return int(to.Sub(from)/day) + 1
}

// FormatDate writes a program day as YYYY-MM-DD.
func FormatDate(d time.Time) string { return d.Format(dateLayout) }

// PerformanceWindow is the window a query reads, in the program's days
// (UTC midnights), and the previous window of equal length just before
// it. `all` has no previous window.
type PerformanceWindow struct {
	From, To         time.Time
	HasPrevious      bool
	PrevFrom, PrevTo time.Time
}

// Window resolves the query against the program's today and its first
// day (the first day with a rollup row, else the day it was created):
// 7d, 30d and 90d are the last 7, 30 or 90 days up to today included;
// all is from the first day (today at the latest) to today; a custom
// window is as sent. The previous window is the same number of days
// ending the day before From.
func (q PerformanceQuery) Window(today, firstDay time.Time) PerformanceWindow {
	w := PerformanceWindow{To: today, HasPrevious: true}
	switch q.Period {
	case Period7d:
		w.From = today.Add(-6 * day)
	case Period30d:
		w.From = today.Add(-29 * day)
	case Period90d:
		w.From = today.Add(-89 * day)
	case PeriodAll:
		w.From, w.HasPrevious = firstDay, false
		if w.From.After(today) {
			w.From = today
		}
	default:
		w.From, w.To = q.From, q.To
	}
	if w.HasPrevious {
		n := time.Duration(DaysBetween(w.From, w.To))
		w.PrevTo = w.From.Add(-day)
		w.PrevFrom = w.From.Add(-n * day)
	}
	return w
}

// SalesNumbers are a scope's sales in one currency: conversions, revenue
// and commission in minor units, and the refunds of its sales (counted on
// the refund's day) with the amount they refunded in minor units.
type SalesNumbers struct {
	Conversions int64
	Revenue     int64
	Commission  int64
	Refunds     int64
	Refunded    int64
}

// PerformanceNumbers are the counters of a day, a window or a group.
// Conversions count every currency; money is per currency, never summed
// across currencies.
type PerformanceNumbers struct {
	Clicks   int64
	Visitors int64
	Leads    int64
	// Partners is the number of distinct partners with any non-zero
	// counter (days and windows only).
	Partners int64
	Sales    map[Currency]SalesNumbers
}

// Conversions is the number of conversions in every currency.
func (n *PerformanceNumbers) Conversions() int64 {
	var total int64
	for _, s := range n.Sales {
		total += s.Conversions
	}
	return total
}

// Refunds is the number of refunds in every currency.
func (n *PerformanceNumbers) Refunds() int64 {
	var total int64
	for _, s := range n.Sales {
		total += s.Refunds
	}
	return total
}

// AddSales adds a currency's sales.
func (n *PerformanceNumbers) AddSales(c Currency, s SalesNumbers) {
	if n.Sales == nil {
		n.Sales = map[Currency]SalesNumbers{}
	}
	t := n.Sales[c]
	t.Conversions += s.Conversions
	t.Revenue = AddMinor(t.Revenue, s.Revenue)
	t.Commission = AddMinor(t.Commission, s.Commission)
	t.Refunds += s.Refunds
	t.Refunded = AddMinor(t.Refunded, s.Refunded)
	n.Sales[c] = t
}

// PerformanceDay is one day of the window; a day without events has
// zeros.
type PerformanceDay struct {
	Date time.Time
	PerformanceNumbers
}

// PerformanceGroup is one partner's or link's numbers over the window.
// A link group carries its code and partner; a partner group its name
// and email.
type PerformanceGroup struct {
	ID        int64
	Name      string
	Email     string
	Code      string
	PartnerID int64
	PerformanceNumbers
}

// PerformanceReport is the answer to a performance query: the days, the
// window's totals and the previous window's totals, or with GroupBy the
// top groups (Days, Total and Previous are then empty).
type PerformanceReport struct {
	Query    PerformanceQuery
	Window   PerformanceWindow
	Currency Currency // the program's
	Days     []PerformanceDay
	Total    PerformanceNumbers
	Previous PerformanceNumbers
	Groups   []PerformanceGroup
}

// PerformanceService reads a program's performance from the rollups.
type PerformanceService interface {
	// Performance resolves q's window in the program's timezone and reads
	// its rollups (two queries: the program's facts, then the window's
	// and the previous window's rows, or the groups). Days has one entry
	// per day of the window, oldest first. Groups are ordered by revenue
	// in the program's currency, then clicks, both descending, then id;
	// partner and link 0 (none) are not a group. Errors: ENotFound when
	// the program does not exist.
	Performance(ctx context.Context, q PerformanceQuery) (*PerformanceReport, error)
}

// Trend is a counter's change against the previous window: Percent is nil
// when it has no value (no previous window, or a previous value of 0
// under a non-zero current one).
type Trend struct {
	Percent   *decimal.Decimal
	Direction string
}

// NewTrend compares cur with prev: the percent change (cur - prev) / prev
// × 100 rounded to one decimal, half away from zero; the direction is the
// sign of cur - prev. A previous value of 0 gives 0 % (neutral) when cur
// is 0 too, else no percent and "up". Without a previous window the
// trend is null and neutral.
func NewTrend(cur, prev int64, hasPrevious bool) Trend {
	switch {
	case !hasPrevious:
		return Trend{Direction: TrendNeutral}
	case prev == 0 && cur == 0:
		zero := decimal.Zero
		return Trend{Percent: &zero, Direction: TrendNeutral}
	case prev == 0:
		return Trend{Direction: TrendUp}
	}
	c, p := decimal.NewFromInt(cur), decimal.NewFromInt(prev)
	pct := roundHalfAway(c.Sub(p).Mul(decimal.NewFromInt(100)).DivRound(p, 16), 1)
	t := Trend{Percent: &pct, Direction: TrendNeutral}
	switch {
	case cur > prev:
		t.Direction = TrendUp
	case cur < prev:
		t.Direction = TrendDown
	}
	return t
}

// ConversionRate is conversions / clicks × 100, rounded half away from
// zero to two decimals; 0 without clicks.
func ConversionRate(conversions, clicks int64) decimal.Decimal {
	if clicks == 0 {
		return decimal.Zero
	}
	return roundHalfAway(decimal.NewFromInt(conversions).Mul(decimal.NewFromInt(100)).DivRound(decimal.NewFromInt(clicks), 16), 2)
}

// AverageOrderValue is a currency's revenue / its conversions in major
// units, rounded half away from zero to the currency's minor unit (cents;
// whole dong for VND); 0 without conversions.
func AverageOrderValue(s SalesNumbers, c Currency) decimal.Decimal {
	if s.Conversions == 0 {
		return decimal.Zero
	}
	minor := roundHalfAway(decimal.NewFromInt(s.Revenue).DivRound(decimal.NewFromInt(s.Conversions), 16), 0)
	return minor.Shift(-c.Exponent())
}

// roundHalfAway rounds d to places decimals, half away from zero.
func roundHalfAway(d decimal.Decimal, places int32) decimal.Decimal {
	r := d.Abs().Round(places)
	if d.IsNegative() {
		return r.Neg()
	}
	return r
}
