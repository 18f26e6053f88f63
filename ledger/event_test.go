package ledger

import (
	"fmt"
	"testing"
	"time"
)

func TestEventQueryValidate(t *testing.T) {
	t.Parallel()
	t.Run("OK defaults", func(t *testing.T) {
		q, err := EventQueryInput{}.Validate(7)
		if err != nil {
			t.Fatal(err)
		}
		if q.ProgramID != 7 || q.Page != 1 || q.PageSize != 10 || q.Type != "" || q.From != nil || q.To != nil || q.Cap() != 30 {
			t.Fatalf("q = %+v", q)
		}
		if len(q.Types()) != 3 {
			t.Fatalf("types = %v", q.Types())
		}
	})
	t.Run("OK everything", func(t *testing.T) {
		q, err := EventQueryInput{
			Page: Some[int64](3), PageSize: Some[int64](100), EventType: Some("lead"),
			DateFrom: Some("2026-03-01"), DateTo: Some("2026-03-01"),
		}.Validate(7)
		if err != nil {
			t.Fatal(err)
		}
		if q.Page != 3 || q.PageSize != 100 || q.Cap() != 300 || q.Type != EventLead || len(q.Types()) != 1 {
			t.Fatalf("q = %+v", q)
		}
		if !q.From.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) ||
			!q.To.Equal(time.Date(2026, 3, 1, 23, 59, 59, 999999000, time.UTC)) {
			t.Fatalf("bounds = %v .. %v", q.From, q.To)
		}
	})
	t.Run("OK all, the default, sent", func(t *testing.T) {
		q, err := EventQueryInput{EventType: Some("all")}.Validate(7)
		if err != nil || q.Type != "" || len(q.Types()) != 3 {
			t.Fatalf("q = %+v, err = %v", q, err)
		}
	})
	t.Run("OK huge page", func(t *testing.T) {
		q, err := EventQueryInput{Page: Some[int64](1 << 62)}.Validate(7)
		if err != nil || q.Page != 1<<62 {
			t.Fatalf("q = %+v, err = %v", q, err)
		}
	})

	for _, tc := range []struct {
		desc string
		in   EventQueryInput
		want string
	}{
		{"page zero", EventQueryInput{Page: Some[int64](0)}, MsgEventPage},
		{"page negative", EventQueryInput{Page: Some[int64](-1)}, MsgEventPage},
		{"page not a number", EventQueryInput{Page: BadInput[int64]()}, MsgEventPage},
		{"pageSize zero", EventQueryInput{PageSize: Some[int64](0)}, MsgEventPageSize},
		{"pageSize over 100", EventQueryInput{PageSize: Some[int64](101)}, MsgEventPageSize},
		{"pageSize not a number", EventQueryInput{PageSize: BadInput[int64]()}, MsgEventPageSize},
		{"eventType unknown", EventQueryInput{EventType: Some("sale")}, MsgEventType},
		{"eventType case", EventQueryInput{EventType: Some("Click")}, MsgEventType},
		{"dateFrom garbage", EventQueryInput{DateFrom: Some("yesterday")}, MsgEventDateFrom},
		{"dateFrom impossible date", EventQueryInput{DateFrom: Some("2026-02-30")}, MsgEventDateFrom},
		{"dateTo garbage", EventQueryInput{DateTo: Some("1700000000")}, MsgEventDateTo},
		{"dateFrom after dateTo", EventQueryInput{DateFrom: Some("2026-03-02"), DateTo: Some("2026-03-01T23:00:00Z")}, MsgEventDateOrder},
		{"page checked first", EventQueryInput{Page: Some[int64](0), EventType: Some("x")}, MsgEventPage},
	} {
		t.Run("Err "+tc.desc, func(t *testing.T) {
			_, err := tc.in.Validate(7)
			if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseEventTime(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	for _, tc := range []struct {
		desc  string
		in    string
		upper bool
		want  time.Time
	}{
		{"date, lower", "2026-03-01", false, utc("2026-03-01T00:00:00Z")},
		{"date, upper covers the day", "2026-03-01", true, utc("2026-03-01T23:59:59.999999Z")},
		{"seconds, lower", "2026-03-01T10:11:12Z", false, utc("2026-03-01T10:11:12Z")},
		{"seconds, upper covers the second", "2026-03-01T10:11:12Z", true, utc("2026-03-01T10:11:12.999999Z")},
		{"milliseconds, lower", "2026-03-01T10:11:12.345Z", false, utc("2026-03-01T10:11:12.345Z")},
		{"milliseconds, upper covers the millisecond", "2026-03-01T10:11:12.345Z", true, utc("2026-03-01T10:11:12.345999Z")},
		{"microseconds, upper is exact", "2026-03-01T10:11:12.345678Z", true, utc("2026-03-01T10:11:12.345678Z")},
		{"nanoseconds, upper is exact", "2026-03-01T10:11:12.345678901Z", true, utc("2026-03-01T10:11:12.345678901Z")},
		{"offset", "2026-03-01T10:11:12+02:00", false, utc("2026-03-01T08:11:12Z")},
		{"offset, upper", "2026-03-01T10:11:12.5+02:00", true, utc("2026-03-01T08:11:12.599999Z")},
		{"offset whose plus became a space", "2026-03-01T10:11:12 02:00", false, utc("2026-03-01T08:11:12Z")},
		{"no offset is UTC", "2026-03-01T10:11:12", false, utc("2026-03-01T10:11:12Z")},
		{"minutes, upper covers the minute", "2026-03-01T10:11", true, utc("2026-03-01T10:11:59.999999Z")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := ParseEventTime(tc.in, tc.upper)
			if !ok || !got.Equal(tc.want) {
				t.Fatalf("ParseEventTime(%q, %v) = %v, %v; want %v", tc.in, tc.upper, got, ok, tc.want)
			}
		})
	}
}

func TestClickEventID(t *testing.T) {
	t.Parallel()
	seen := map[int64]bool{}
	for i := 0; i < 1000; i++ {
		cid := NewClickID(time.Now())
		id := ClickEventID(cid)
		if id != ClickEventID(cid) {
			t.Fatal("not stable")
		}
		if id < 1<<52 || id >= 1<<53 {
			t.Fatalf("id %d outside [2^52, 2^53)", id)
		}
		if seen[id] {
			t.Fatalf("collision at %d", id)
		}
		seen[id] = true
	}
}

func TestMergeEvents(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// events returns n events of a type, newest first, one a minute apart
	// starting offset minutes before base.
	events := func(typ EventType, n, offset int) []TrackingEvent {
		out := make([]TrackingEvent, n)
		for i := range out {
			out[i] = TrackingEvent{ID: int64(1000 - i), Type: typ, Timestamp: base.Add(-time.Duration(offset+i*3) * time.Minute)}
		}
		return out
	}
	q := EventQuery{Page: 1, PageSize: 2}

	t.Run("OK sorted newest first across types", func(t *testing.T) {
		p := MergeEvents(EventQuery{Page: 1, PageSize: 10}, events(EventClick, 3, 0), events(EventLead, 3, 1), events(EventConversion, 3, 2))
		if p.Total != 9 || len(p.Events) != 9 || p.PageCount() != 1 {
			t.Fatalf("total %d, len %d", p.Total, len(p.Events))
		}
		want := []EventType{EventClick, EventLead, EventConversion, EventClick, EventLead, EventConversion, EventClick, EventLead, EventConversion}
		for i, e := range p.Events {
			if e.Type != want[i] || (i > 0 && e.Timestamp.After(p.Events[i-1].Timestamp)) {
				t.Fatalf("event %d = %s at %v", i, e.Type, e.Timestamp)
			}
		}
	})
	t.Run("OK cap per type and total", func(t *testing.T) {
		// Each read holds more than 3 × pageSize rows: the cap applies
		// before the merge, so total is 3 × 3 × pageSize.
		p := MergeEvents(q, events(EventClick, 10, 0), events(EventLead, 10, 1), events(EventConversion, 10, 2))
		if p.Total != 18 || p.PageCount() != 9 || len(p.Events) != 2 {
			t.Fatalf("total %d, pages %d, len %d", p.Total, p.PageCount(), len(p.Events))
		}
	})
	t.Run("OK ties: conversion, lead, click, then id", func(t *testing.T) {
		at := []TrackingEvent{
			{ID: 1, Type: EventClick, Timestamp: base},
			{ID: 9, Type: EventClick, Timestamp: base},
			{ID: 5, Type: EventLead, Timestamp: base},
			{ID: 2, Type: EventConversion, Timestamp: base},
		}
		p := MergeEvents(EventQuery{Page: 1, PageSize: 10}, at)
		got := ""
		for _, e := range p.Events {
			got += fmt.Sprintf("%s%d ", e.Type, e.ID)
		}
		if got != "conversion2 lead5 click9 click1 " {
			t.Fatalf("order = %s", got)
		}
	})
	t.Run("OK last partial page", func(t *testing.T) {
		p := MergeEvents(EventQuery{Page: 3, PageSize: 2}, events(EventClick, 5, 0))
		if p.Total != 5 || len(p.Events) != 1 || p.PageCount() != 3 {
			t.Fatalf("total %d, len %d", p.Total, len(p.Events))
		}
	})
	t.Run("OK pages past the end are empty", func(t *testing.T) {
		for _, page := range []int{4, 10, 1 << 62} {
			p := MergeEvents(EventQuery{Page: page, PageSize: 2}, events(EventClick, 6, 0))
			if p.Total != 6 || p.Page != page || p.Events == nil || len(p.Events) != 0 {
				t.Fatalf("page %d: total %d, events %v", page, p.Total, p.Events)
			}
		}
	})
	t.Run("OK nothing at all", func(t *testing.T) {
		p := MergeEvents(EventQuery{Page: 1, PageSize: 10}, nil, nil, nil)
		if p.Total != 0 || p.PageCount() != 0 || p.Events == nil || len(p.Events) != 0 {
			t.Fatalf("empty listing = %+v", p)
		}
	})
}
