package ledger

import "testing"

func TestBrandLinkQueryValidate(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   BrandLinkQueryInput
		msg  string // "" when valid
	}{
		{"defaults", BrandLinkQueryInput{}, ""},
		{"page zero", BrandLinkQueryInput{Page: Some[int64](0)}, MsgLinkPage},
		{"page not a number", BrandLinkQueryInput{Page: BadInput[int64]()}, MsgLinkPage},
		{"pageSize over 100", BrandLinkQueryInput{PageSize: Some[int64](101)}, MsgLinkPageSize},
		{"pageSize zero", BrandLinkQueryInput{PageSize: Some[int64](0)}, MsgLinkPageSize},
		{"partner_id zero", BrandLinkQueryInput{PartnerID: Some[int64](0)}, MsgLinkPartnerFilter},
		{"partner_id not a number", BrandLinkQueryInput{PartnerID: BadInput[int64]()}, MsgLinkPartnerFilter},
		{"status unknown", BrandLinkQueryInput{Status: Some("paused")}, MsgLinkStatus},
		{"status in capitals", BrandLinkQueryInput{Status: Some("ACTIVE")}, MsgLinkStatus},
		{"everything", BrandLinkQueryInput{Page: Some[int64](2), PageSize: Some[int64](100), PartnerID: Some[int64](7), Status: Some("disabled")}, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			q, err := tc.in.Validate(3)
			if tc.msg != "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.msg {
					t.Fatalf("err = %v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.ProgramID != 3 || q.Page < 1 || q.PageSize < 1 || q.PageSize > 100 {
				t.Fatalf("query %+v", q)
			}
		})
	}
	q, _ := BrandLinkQueryInput{}.Validate(1)
	if q.Page != 1 || q.PageSize != 10 || q.PartnerID != nil || q.Active != nil || q.Offset() != 0 {
		t.Fatalf("defaults %+v", q)
	}
	q, _ = BrandLinkQueryInput{Page: Some[int64](3), PageSize: Some[int64](20), Status: Some("disabled")}.Validate(1)
	if q.Offset() != 40 || q.Active == nil || *q.Active {
		t.Fatalf("query %+v offset %d", q, q.Offset())
	}
	q, _ = BrandLinkQueryInput{Page: Some[int64](1<<62 + 1), PageSize: Some[int64](100)}.Validate(1)
	if q.Offset() != 1<<63-1 {
		t.Fatalf("offset %d does not saturate", q.Offset())
	}
}

func TestBrandLinkURL(t *testing.T) {
	l := BrandLink{Link: Link{Code: "pat_2-x"}, Domain: "shop.example"}
	if got := l.URL(); got != "https://shop.example/?aff=pat_2-x" {
		t.Fatalf("url %s", got)
	}
	code, err := ReferralCode(l.URL())
	if err != nil || code != l.Code {
		t.Fatalf("the click path reads %q, %v from %s", code, err, l.URL())
	}
}
