package ledger

import (
	"math"
	"strings"
	"testing"
)

func TestProgramPartnerQueryValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		in   ProgramPartnerQueryInput
		want ProgramPartnerQuery
	}{
		{"OK defaults", ProgramPartnerQueryInput{},
			ProgramPartnerQuery{ProgramID: 7, Page: 1, PageSize: 10}},
		{"OK everything", ProgramPartnerQueryInput{Page: Some[int64](3), PageSize: Some[int64](100),
			Status: Some("removed"), Q: Some("ÉLodie@Example")},
			ProgramPartnerQuery{ProgramID: 7, Page: 3, PageSize: 100, Status: "removed", Search: "élodie@example"}},
		{"OK active", ProgramPartnerQueryInput{Status: Some("active")},
			ProgramPartnerQuery{ProgramID: 7, Page: 1, PageSize: 10, Status: "active"}},
		{"OK q of 100 characters", ProgramPartnerQueryInput{Q: Some(strings.Repeat("é", 100))},
			ProgramPartnerQuery{ProgramID: 7, Page: 1, PageSize: 10, Search: strings.Repeat("é", 100)}},
		{"OK q with LIKE wildcards", ProgramPartnerQueryInput{Q: Some(`50%_\`)},
			ProgramPartnerQuery{ProgramID: 7, Page: 1, PageSize: 10, Search: `50%_\`}},
		{"OK huge page", ProgramPartnerQueryInput{Page: Some[int64](math.MaxInt64)},
			ProgramPartnerQuery{ProgramID: 7, Page: math.MaxInt64, PageSize: 10}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			q, err := tc.in.Validate(7)
			if err != nil || q != tc.want {
				t.Fatalf("q = %+v, err = %v; want %+v", q, err, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		desc string
		in   ProgramPartnerQueryInput
		want string
	}{
		{"page zero", ProgramPartnerQueryInput{Page: Some[int64](0)}, MsgEventPage},
		{"page not a number", ProgramPartnerQueryInput{Page: BadInput[int64]()}, MsgEventPage},
		{"pageSize zero", ProgramPartnerQueryInput{PageSize: Some[int64](0)}, MsgEventPageSize},
		{"pageSize 101", ProgramPartnerQueryInput{PageSize: Some[int64](101)}, MsgEventPageSize},
		{"pageSize not a number", ProgramPartnerQueryInput{PageSize: BadInput[int64]()}, MsgEventPageSize},
		{"status unknown", ProgramPartnerQueryInput{Status: Some("paused")}, MsgPartnerStatus},
		{"status upper case", ProgramPartnerQueryInput{Status: Some("ACTIVE")}, MsgPartnerStatus},
		{"group_id zero", ProgramPartnerQueryInput{GroupID: Some[int64](0)}, MsgPartnerGroupFilter},
		{"group_id not a number", ProgramPartnerQueryInput{GroupID: BadInput[int64]()}, MsgPartnerGroupFilter},
		{"q of 101 characters", ProgramPartnerQueryInput{Q: Some(strings.Repeat("a", 101))}, MsgPartnerSearch},
		{"q with NUL", ProgramPartnerQueryInput{Q: Some("a\x00b")}, MsgPartnerSearch},
		{"q not UTF-8", ProgramPartnerQueryInput{Q: Some("a\xffb")}, MsgPartnerSearch},
		{"page checked before status", ProgramPartnerQueryInput{Page: Some[int64](-1), Status: Some("x")}, MsgEventPage},
	} {
		t.Run("ErrInvalid "+tc.desc, func(t *testing.T) {
			_, err := tc.in.Validate(7)
			if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestProgramPartnerQueryOffset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc           string
		page, pageSize int
		want           int64
	}{
		{"first page", 1, 10, 0},
		{"third page", 3, 25, 50},
		{"saturated", math.MaxInt64, 100, math.MaxInt64},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			q := ProgramPartnerQuery{Page: tc.page, PageSize: tc.pageSize}
			if got := q.Offset(); got != tc.want {
				t.Fatalf("Offset() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestProgramPartnerPageCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		total int64
		size  int
		want  int64
	}{{0, 10, 0}, {1, 10, 1}, {10, 10, 1}, {11, 10, 2}} {
		p := ProgramPartnerPage{Total: tc.total, PageSize: tc.size}
		if got := p.PageCount(); got != tc.want {
			t.Errorf("PageCount(%d, %d) = %d, want %d", tc.total, tc.size, got, tc.want)
		}
	}
}
