package ledger

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Analytics sources: a program's clicks, leads, sales and revenue over a
// date range, grouped by the referring domain of the click that brought
// each customer and by partner. Test events are left out; a lead counts
// once it settles (a provisional lead does not count).

// Sources grouping dimensions.
const (
	GroupReferrer = "referrer"
	GroupPartner  = "partner"
)

// Bounds of a sources query.
const (
	DefaultSourcesDays  = 30
	MaxSourcesDays      = 92
	DefaultSourcesLimit = 50
	MaxSourcesLimit     = 100
)

// Messages of the sources query parameters.
const (
	MsgSourcesFrom    = "from must be an ISO 8601 date or date-time"
	MsgSourcesTo      = "to must be an ISO 8601 date or date-time"
	MsgSourcesOrder   = "from must not be later than to"
	MsgSourcesRange   = "the range from from to to must not exceed 92 days"
	MsgSourcesLimit   = "limit must be an integer from 1 to 100"
	MsgSourcesGroupBy = "group_by must be one of: referrer, partner, referrer,partner"
)

// SourcesQueryInput is the query string as sent ("" when absent).
type SourcesQueryInput struct {
	From, To, Limit, GroupBy string
}

// SourcesQuery is a validated sources query. From and To are inclusive.
type SourcesQuery struct {
	ProgramID  int64
	From, To   time.Time
	ByReferrer bool
	ByPartner  bool
	Limit      int
}

// GroupBy renders the grouping as the query names it.
func (q SourcesQuery) GroupBy() string {
	switch {
	case q.ByReferrer && q.ByPartner:
		return GroupReferrer + "," + GroupPartner
	case q.ByReferrer:
		return GroupReferrer
	}
	return GroupPartner
}

// Validate checks the query: to defaults to now and from to 30 days
// before to; a bare date is a whole UTC day; the range is at most 92
// days. Errors: EInvalid.
func (in SourcesQueryInput) Validate(programID int64, now time.Time) (SourcesQuery, error) {
	q := SourcesQuery{ProgramID: programID, To: now.UTC(), ByReferrer: true, ByPartner: true, Limit: DefaultSourcesLimit}
	if s := strings.TrimSpace(in.To); s != "" {
		t, ok := ParseEventTime(s, true)
		if !ok {
			return q, NewError(EInvalid, MsgSourcesTo)
		}
		q.To = t
	}
	q.From = q.To.Add(-DefaultSourcesDays * 24 * time.Hour)
	if s := strings.TrimSpace(in.From); s != "" {
		t, ok := ParseEventTime(s, false)
		if !ok {
			return q, NewError(EInvalid, MsgSourcesFrom)
		}
		q.From = t
	}
	if q.From.After(q.To) {
		return q, NewError(EInvalid, MsgSourcesOrder)
	}
	if q.To.Sub(q.From) > MaxSourcesDays*24*time.Hour {
		return q, NewError(EInvalid, MsgSourcesRange)
	}
	if s := strings.TrimSpace(in.Limit); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxSourcesLimit {
			return q, NewError(EInvalid, MsgSourcesLimit)
		}
		q.Limit = n
	}
	if s := strings.TrimSpace(in.GroupBy); s != "" {
		q.ByReferrer, q.ByPartner = false, false
		for _, part := range strings.Split(s, ",") {
			switch strings.TrimSpace(part) {
			case GroupReferrer:
				q.ByReferrer = true
			case GroupPartner:
				q.ByPartner = true
			default:
				return q, NewError(EInvalid, MsgSourcesGroupBy)
			}
		}
	}
	return q, nil
}

// SourceRow is one group: a referring domain ("" for none: direct or
// unknown) and a partner (nil when the events had none), each set only
// when the query groups by it.
type SourceRow struct {
	ReferrerDomain string
	PartnerID      *int64
	PartnerName    string
	Clicks         int64
	Leads          int64
	Sales          int64
	Revenue        map[Currency]int64 // sale amounts less refunds, in minor units, per currency
}

// SourcesReport is the answer: the top rows (most clicks, then leads,
// then sales first) and the totals over every row.
type SourcesReport struct {
	Query  SourcesQuery
	Rows   []SourceRow
	Groups int // groups in all, before the limit
	Totals SourceRow
}

// AnalyticsService computes analytics over a program's events.
type AnalyticsService interface {
	// Sources groups a program's events by referrer domain and partner.
	Sources(ctx context.Context, q SourcesQuery) (*SourcesReport, error)
}
