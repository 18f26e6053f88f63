package ledger

import (
	"testing"
	"time"
)

func TestSourcesQueryValidate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 31, 15, 4, 5, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		desc     string
		in       SourcesQueryInput
		wantFrom time.Time
		wantTo   time.Time
		wantBy   string
		limit    int
		wantErr  string
	}{
		{desc: "OK defaults: the last 30 days, both groupings", wantFrom: now.Add(-30 * day), wantTo: now,
			wantBy: "referrer,partner", limit: 50},
		{desc: "OK bare dates are whole UTC days", in: SourcesQueryInput{From: "2026-03-01", To: "2026-03-02"},
			wantFrom: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), wantTo: time.Date(2026, 3, 2, 23, 59, 59, 999999000, time.UTC),
			wantBy: "referrer,partner", limit: 50},
		{desc: "OK from alone runs to now", in: SourcesQueryInput{From: "2026-03-10T00:00:00Z"},
			wantFrom: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), wantTo: now, wantBy: "referrer,partner", limit: 50},
		{desc: "OK group by referrer only, a limit", in: SourcesQueryInput{GroupBy: "referrer", Limit: "5"},
			wantFrom: now.Add(-30 * day), wantTo: now, wantBy: "referrer", limit: 5},
		{desc: "OK group by partner only", in: SourcesQueryInput{GroupBy: " partner "},
			wantFrom: now.Add(-30 * day), wantTo: now, wantBy: "partner", limit: 50},
		{desc: "OK 92 whole days", in: SourcesQueryInput{From: "2025-12-30", To: "2026-03-31"},
			wantFrom: time.Date(2025, 12, 30, 0, 0, 0, 0, time.UTC), wantTo: time.Date(2026, 3, 31, 23, 59, 59, 999999000, time.UTC),
			wantBy: "referrer,partner", limit: 50},
		{desc: "ErrRange 93 whole days", in: SourcesQueryInput{From: "2025-12-29", To: "2026-03-31"}, wantErr: MsgSourcesRange},
		{desc: "ErrFrom", in: SourcesQueryInput{From: "yesterday"}, wantErr: MsgSourcesFrom},
		{desc: "ErrTo", in: SourcesQueryInput{To: "2026-13-01"}, wantErr: MsgSourcesTo},
		{desc: "ErrOrder", in: SourcesQueryInput{From: "2026-03-02", To: "2026-03-01"}, wantErr: MsgSourcesOrder},
		{desc: "ErrRange", in: SourcesQueryInput{From: "2025-01-01", To: "2026-03-01"}, wantErr: MsgSourcesRange},
		{desc: "ErrLimit zero", in: SourcesQueryInput{Limit: "0"}, wantErr: MsgSourcesLimit},
		{desc: "ErrLimit too large", in: SourcesQueryInput{Limit: "101"}, wantErr: MsgSourcesLimit},
		{desc: "ErrLimit not a number", in: SourcesQueryInput{Limit: "ten"}, wantErr: MsgSourcesLimit},
		{desc: "ErrGroupBy", in: SourcesQueryInput{GroupBy: "country"}, wantErr: MsgSourcesGroupBy},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			q, err := c.in.Validate(7, now)
			if c.wantErr != "" {
				if ErrorMessage(err) != c.wantErr || ErrorCode(err) != EInvalid {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !q.From.Equal(c.wantFrom) || !q.To.Equal(c.wantTo) || q.GroupBy() != c.wantBy || q.Limit != c.limit || q.ProgramID != 7 {
				t.Fatalf("got %+v (group %s)", q, q.GroupBy())
			}
		})
	}
}
