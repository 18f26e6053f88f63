package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"strings"
	"time"
)

// EventType names a kind of tracking event in the dashboard listing.
type EventType string

// The listing's event types. A conversion is a sale.
const (
	EventClick      EventType = "click"
	EventLead       EventType = "lead"
	EventConversion EventType = "conversion"
)

// EventTypesAll is the eventType that asks for every type (the default).
const EventTypesAll = "all"

// eventTypes are every type, in the order the listing reads them.
var eventTypes = []EventType{EventClick, EventLead, EventConversion}

// rank orders events that share a timestamp: the later funnel step first.
func (t EventType) rank() int {
	switch t {
	case EventConversion:
		return 0
	case EventLead:
		return 1
	}
	return 2
}

// Listing bounds. The spec fixes the defaults and the cap of 3 × pageSize
// rows per type; pageSize is bounded at 100 (so at most 900 events are
// merged per request).
const (
	DefaultEventPage     = 1
	DefaultEventPageSize = 10
	MaxEventPageSize     = 100
	EventCapFactor       = 3
)

// Messages of the listing's query parameters.
const (
	MsgEventPage      = "page must be a positive integer"
	MsgEventPageSize  = "pageSize must be an integer from 1 to 100"
	MsgEventType      = "eventType must be one of: all, click, lead, conversion"
	MsgEventDateFrom  = "dateFrom must be an ISO 8601 date or date-time"
	MsgEventDateTo    = "dateTo must be an ISO 8601 date or date-time"
	MsgEventDateOrder = "dateFrom must not be later than dateTo"
)

// TrackingEvent is one item of the dashboard listing: a click, a lead or
// a conversion (sale) normalized to the spec's fields. Only the fields that
// apply to the type are meaningful; a nil string is a value the source
// event does not carry.
type TrackingEvent struct {
	ID        int64
	Type      EventType
	Timestamp time.Time // the source event's own time
	ClickID   *string

	// click and lead
	SessionID *string
	PageURL   *string
	Converted bool

	// click
	ReferrerURL *string
	GeoCountry  *string
	GeoRegion   *string
	GeoCity     *string
	DeviceType  *string
	DeviceOS    *string
	BrowserName *string

	// lead
	CustomerKey *string

	// conversion
	AmountCents      int64
	Currency         string
	SaleType         string
	PaymentStatus    string
	ProcessorEventID string
	IsRecurring      bool

	CreatedAt time.Time
}

// ClickEventID returns the integer id of a click in the listing. Click ids
// are text (ULIDs) while the spec's id is an integer, so the listing uses
// the first 52 bits of the SHA-256 of the click id with bit 52 set: stable
// for a click, in [2^52, 2^53) so that it stays exact in JavaScript and
// never equals a lead or sale id (bigserials far below 2^52).
func ClickEventID(clickID string) int64 {
	h := sha256.Sum256([]byte(clickID))
	return int64(binary.BigEndian.Uint64(h[:8])>>12) | 1<<52
}

// EventQueryInput is the listing's query as the caller sent it.
type EventQueryInput struct {
	Page      Input[int64]
	PageSize  Input[int64]
	EventType Input[string]
	DateFrom  Input[string]
	DateTo    Input[string]
}

// EventQuery is a validated listing request.
type EventQuery struct {
	ProgramID int64
	Type      EventType  // "" for every type
	From      *time.Time // inclusive
	To        *time.Time // inclusive
	Page      int
	PageSize  int
}

// Validate checks the query in parameter order and applies the defaults.
func (in EventQueryInput) Validate(programID int64) (EventQuery, error) {
	q := EventQuery{ProgramID: programID, Page: DefaultEventPage, PageSize: DefaultEventPageSize}
	if in.Page.Present {
		if in.Page.Bad || in.Page.Value < 1 {
			return EventQuery{}, NewError(EInvalid, MsgEventPage)
		}
		q.Page = int(in.Page.Value)
	}
	if in.PageSize.Present {
		if in.PageSize.Bad || in.PageSize.Value < 1 || in.PageSize.Value > MaxEventPageSize {
			return EventQuery{}, NewError(EInvalid, MsgEventPageSize)
		}
		q.PageSize = int(in.PageSize.Value)
	}
	// "all", the spec's default, may also be sent: every type, as without it.
	if in.EventType.Present && (in.EventType.Bad || in.EventType.Value != EventTypesAll) {
		t := EventType(in.EventType.Value)
		if in.EventType.Bad || (t != EventClick && t != EventLead && t != EventConversion) {
			return EventQuery{}, NewError(EInvalid, MsgEventType)
		}
		q.Type = t
	}
	if in.DateFrom.Present {
		t, ok := ParseEventTime(in.DateFrom.Value, false)
		if in.DateFrom.Bad || !ok {
			return EventQuery{}, NewError(EInvalid, MsgEventDateFrom)
		}
		q.From = &t
	}
	if in.DateTo.Present {
		t, ok := ParseEventTime(in.DateTo.Value, true)
		if in.DateTo.Bad || !ok {
			return EventQuery{}, NewError(EInvalid, MsgEventDateTo)
		}
		q.To = &t
	}
	if q.From != nil && q.To != nil && q.From.After(*q.To) {
		return EventQuery{}, NewError(EInvalid, MsgEventDateOrder)
	}
	return q, nil
}

// Cap is the number of rows read per type: 3 × pageSize.
func (q EventQuery) Cap() int { return EventCapFactor * q.PageSize }

// Types returns the event types the query reads.
func (q EventQuery) Types() []EventType {
	if q.Type != "" {
		return []EventType{q.Type}
	}
	return eventTypes
}

// eventTimeLayouts are the ISO 8601 forms the listing accepts beyond a
// bare date: RFC 3339 with or without fractional seconds, and the same
// without an offset (read as UTC), down to minutes.
var eventTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04"}

// ParseEventTime reads a dateFrom/dateTo bound. A lower bound is the
// instant written. An upper bound (upper true) covers the whole of its
// last written unit, so that an event shown with that timestamp is
// included: dateTo=2026-03-01 includes the whole UTC day,
// 2026-03-01T10:11:12Z the whole second, 2026-03-01T10:11:12.345Z the whole
// millisecond (the listing renders milliseconds; Postgres keeps
// microseconds). An offset whose "+" a URL decoder turned into a space is
// read as "+". A time without an offset is UTC.
func ParseEventTime(s string, upper bool) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if n := len(s); n > 16 && s[n-6] == ' ' && s[n-3] == ':' {
		s = s[:n-6] + "+" + s[n-5:]
	}
	if d, err := time.Parse("2006-01-02", s); err == nil {
		if upper {
			d = d.Add(24*time.Hour - time.Microsecond)
		}
		return d, true
	}
	for _, layout := range eventTimeLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		t = t.UTC()
		if upper {
			t = t.Add(writtenUnit(s) - time.Microsecond)
		}
		return t, true
	}
	return time.Time{}, false
}

// writtenUnit is the smallest unit an ISO 8601 date-time spells out:
// a minute, a second, or a power of ten of a second (a microsecond at
// most, what Postgres stores).
func writtenUnit(s string) time.Duration {
	clock := s[strings.IndexByte(s, 'T')+1:]
	if strings.Count(clock[:min(len(clock), 8)], ":") < 2 {
		return time.Minute
	}
	dot := strings.IndexByte(clock, '.')
	if dot < 0 {
		return time.Second
	}
	digits := 0
	for _, r := range clock[dot+1:] {
		if r < '0' || r > '9' {
			break
		}
		digits++
	}
	unit := time.Second
	for i := 0; i < digits && unit > time.Microsecond; i++ {
		unit /= 10
	}
	return unit
}

// EventPage is one page of the listing.
type EventPage struct {
	Events   []TrackingEvent
	Total    int // size of the merged set (at most 3 × pageSize per type read)
	Page     int
	PageSize int
}

// PageCount is the number of pages of the merged set.
func (p *EventPage) PageCount() int { return (p.Total + p.PageSize - 1) / p.PageSize }

// MergeEvents merges the per-type reads (each already newest first and
// capped at q.Cap()), sorts the merged set newest first and cuts q's page
// out of it. Events sharing a timestamp are ordered conversion, lead,
// click, then by id, newest id first, so pages never overlap.
func MergeEvents(q EventQuery, reads ...[]TrackingEvent) *EventPage {
	var all []TrackingEvent
	for _, r := range reads {
		if len(r) > q.Cap() {
			r = r[:q.Cap()]
		}
		all = append(all, r...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := &all[i], &all[j]
		if !a.Timestamp.Equal(b.Timestamp) {
			return a.Timestamp.After(b.Timestamp)
		}
		if a.Type != b.Type {
			return a.Type.rank() < b.Type.rank()
		}
		return a.ID > b.ID
	})
	p := &EventPage{Total: len(all), Page: q.Page, PageSize: q.PageSize, Events: []TrackingEvent{}}
	// Compared as pages first: (Page-1) × PageSize could overflow.
	if q.Page <= p.PageCount() {
		start := (q.Page - 1) * q.PageSize
		p.Events = all[start:min(start+q.PageSize, len(all))]
	}
	return p
}

// EventService reads tracking events for the dashboard listing.
type EventService interface {
	// TrackingEvents reads each type of q newest first, test events
	// excluded, at most q.Cap() rows per type (one indexed query each),
	// and merges them with MergeEvents. It does not check that the
	// program exists (the caller has resolved the caller's role in it).
	// Errors: only unexpected failures.
	TrackingEvents(ctx context.Context, q EventQuery) (*EventPage, error)
}

// pageOffset is the number of rows before a page of a listing; a page
// beyond any possible row saturates instead of overflowing.
func pageOffset(page, size int64) int64 {
	const maxOffset = 1<<63 - 1
	if page-1 > maxOffset/size {
		return maxOffset
	}
	return (page - 1) * size
}
