package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestEmbedTokenInputValidate(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		in      EmbedTokenInput
		want    EmbedTokenRequest
		wantMsg string
	}{
		{desc: "OK", in: EmbedTokenInput{Email: Some(" Ana@Brand.Example ")}, want: EmbedTokenRequest{ProgramID: 4, Email: "ana@brand.example"}},
		{desc: "OK name", in: EmbedTokenInput{Email: Some("ana@brand.example"), Name: Some(" Ana ")}, want: EmbedTokenRequest{ProgramID: 4, Email: "ana@brand.example", Name: "Ana"}},
		{desc: "ErrEmail missing", in: EmbedTokenInput{}, wantMsg: MsgEmbedEmail},
		{desc: "ErrEmail shape", in: EmbedTokenInput{Email: Some("nope")}, wantMsg: MsgEmbedEmail},
		{desc: "ErrEmail type", in: EmbedTokenInput{Email: BadInput[string]()}, wantMsg: MsgEmbedEmail},
		{desc: "ErrName empty", in: EmbedTokenInput{Email: Some("a@b.example"), Name: Some("  ")}, wantMsg: MsgEmbedName},
		{desc: "ErrName type", in: EmbedTokenInput{Email: Some("a@b.example"), Name: BadInput[string]()}, wantMsg: MsgEmbedName},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := tc.in.Validate(4)
			if tc.wantMsg != "" {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != tc.wantMsg {
					t.Fatalf("err %v, want %q", err, tc.wantMsg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if n := (EmbedTokenRequest{Email: "ana.b@x.example"}).PartnerName(); n != "ana.b" {
		t.Errorf("PartnerName from email: %q", n)
	}
}

func TestEmbedTokenShape(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tok, exp := NewEmbedToken(now)
	if !WellFormedEmbedToken(tok) {
		t.Fatalf("minted token %q is not well formed", tok)
	}
	if !exp.Equal(now.Add(time.Hour)) {
		t.Errorf("expires %v", exp)
	}
	for _, bad := range []string{"", "pt_embed_", "pt_partner_" + tok[len(EmbedTokenPrefix):], tok + "a", tok[:len(tok)-1] + "A"} {
		if WellFormedEmbedToken(bad) {
			t.Errorf("%q is well formed", bad)
		}
	}
	g := &EmbedGrant{ExpiresAt: exp}
	if g.Expired(exp.Add(-time.Second)) || !g.Expired(exp) {
		t.Error("Expired is wrong at the boundary")
	}
	if u := EmbedURL("https://track.example/", "pt_embed_abc"); u != "https://track.example/embed/referrals?token=pt_embed_abc" {
		t.Errorf("EmbedURL: %s", u)
	}
}

func TestFrameAncestors(t *testing.T) {
	for in, want := range map[string]string{
		"shop.example":       "https://shop.example https://www.shop.example",
		"www.shop.example":   "https://www.shop.example https://shop.example",
		"Shop.Example":       "https://shop.example https://www.shop.example",
		"":                   "'none'",
		"bad domain; script": "'none'",
	} {
		if got := FrameAncestors(in); got != want {
			t.Errorf("FrameAncestors(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEmbedMoneyWords(t *testing.T) {
	for _, tc := range []struct {
		m    EmbedMoney
		want string
	}{
		{EmbedMoney{USD, decimal.NewFromInt(123450)}, "$1,234.50"},
		{EmbedMoney{EUR, decimal.NewFromInt(5)}, "€0.05"},
		{EmbedMoney{VND, decimal.NewFromInt(50000)}, "50,000₫"},
	} {
		if got := tc.m.Words(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestPartnerName(t *testing.T) {
	long := strings.Repeat("é", 210)
	for _, tc := range []struct{ name, email, want string }{
		{"  Ana B  ", "ana@x.example", "Ana B"},
		{"", "bo.lee@x.example", "bo.lee"},
		{" ", "@x.example", "@x.example"},
		{long, "c@x.example", strings.Repeat("é", 200)},
	} {
		if got := PartnerName(tc.name, tc.email); got != tc.want {
			t.Errorf("PartnerName(%q, %q) = %q, want %q", tc.name, tc.email, got, tc.want)
		}
	}
}
