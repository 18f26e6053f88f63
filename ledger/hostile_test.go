package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Hostile values the edge's reliability suite found getting through
// (cmd/internal/reliability TestHostileInput); each case failed before its
// fix.

// A fixed commission so large that it does not fit in minor units would
// wrap around when a sale computes it: it is refused when the program is
// created or changed.
func TestFixedCommissionRateBounded(t *testing.T) {
	for _, tc := range []struct {
		desc, rate string
		want       string
	}{
		{"huge exponent", "1e400", MsgCommissionRateMax},
		{"beyond int64 cents", "123456789012345678901234567890", MsgCommissionRateMax},
		{"just above the cap", "1000000000.01", MsgCommissionRateMax},
		{"the cap", "1000000000", ""},
		{"a tiny rate", "0.0001", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := validInput()
			in.CommissionType = Some("fixed")
			in.CommissionRate = Some(decimal.RequireFromString(tc.rate))
			p, err := in.ValidateCreate()
			if ErrorMessage(err) != tc.want || (tc.want != "" && ErrorCode(err) != EInvalid) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if err != nil {
				return
			}
			for _, c := range Currencies {
				p.Currency = c
				amount, _ := CommissionAmount(&p, 1000, c)
				if want := p.CommissionRate.Shift(c.Exponent()).Round(0); !decimal.NewFromInt(amount).Equal(want) {
					t.Fatalf("%s %s: commission %d, want %s", tc.rate, c, amount, want)
				}
			}
		})
	}
	// A settings change to a fixed type checks the rate already stored.
	p, err := validInput().ValidateCreate()
	if err != nil {
		t.Fatal(err)
	}
	p.CommissionRate = decimal.RequireFromString("5000000000")
	p.CommissionType = Percent
	if err := (ProgramInput{CommissionType: Some("fixed")}).ApplyUpdate(&p); ErrorMessage(err) != MsgCommissionRateCap && ErrorMessage(err) != MsgCommissionRateMax {
		t.Fatalf("type change with an oversized rate: %v", err)
	}
}

// An amount that does not fit in minor units is not exact.
func TestExactMajorToMinorOutOfRange(t *testing.T) {
	for _, s := range []string{"1e30", "92233720368547758.08", "-92233720368547758.09"} {
		if minor, exact := ExactMajorToMinor(decimal.RequireFromString(s), USD); exact {
			t.Fatalf("ExactMajorToMinor(%s USD) = %d, exact", s, minor)
		}
	}
	if minor, exact := ExactMajorToMinor(decimal.RequireFromString("92233720368547758.07"), USD); !exact || minor != 9223372036854775807 {
		t.Fatalf("the largest amount: %d %v", minor, exact)
	}
	if _, err := WithdrawalAmount(decimal.RequireFromString("1e30"), USD); ErrorCode(err) != EInvalid {
		t.Fatalf("withdrawal of 1e30: %v", err)
	}
}

// line_items is stored as sent in a jsonb column: values Postgres cannot
// store there (a NUL character, a number beyond its range) are refused,
// and so is a lone surrogate escape, which would be stored as U+FFFD.
func TestSaleLineItemsStorable(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		desc, items, want, stored string
	}{
		{"NUL in a value", `[{"sku":"a\u0000b"}]`, MsgLineItems, ""},
		{"NUL in a key", `{"a\u0000":1}`, MsgLineItems, ""},
		{"number beyond numeric", `[1e200000]`, MsgLineItems, ""},
		{"number beyond a double", `[1e400]`, MsgLineItems, ""},
		{"lone surrogate", `["a\ud800b"]`, MsgLineItems, ""},
		{"lone low surrogate in a key", `{"\udfff":1}`, MsgLineItems, ""},
		{"surrogate pair", `["\ud83d\ude00"]`, "", `["` + "\U0001F600" + `"]`},
		{"big integer kept exact", `[{"qty":12345678901234567890}]`, "", `[{"qty":12345678901234567890}]`},
		{"ordinary", `[{"sku":"a","qty":2,"price":19.99}]`, "", `[{"price":19.99,"qty":2,"sku":"a"}]`},
		{"deep", strings.Repeat("[", 500) + strings.Repeat("]", 500), "", strings.Repeat("[", 500) + strings.Repeat("]", 500)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := validSale()
			r.LineItems = []byte(tc.items)
			s, err := r.Validate(now)
			if ErrorMessage(err) != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if err == nil && !strings.Contains(string(s.Metadata), `"line_items":`+tc.stored) {
				t.Fatalf("metadata = %s, want line_items %s", s.Metadata, tc.stored)
			}
		})
	}
}

// StorableJSON with replaceNUL keeps a signed processor event storable.
func TestStorableJSONReplacesNUL(t *testing.T) {
	out, ok := StorableJSON([]byte(`{"a\u0000":"x\u0000y","n":[1e3,12345678901234567890]}`), true)
	if !ok || string(out) != `{"a`+"\uFFFD"+`":"x`+"\uFFFD"+`y","n":[1e3,12345678901234567890]}` {
		t.Fatalf("%s %v", out, ok)
	}
	if _, ok := StorableJSON([]byte(`{"n":1e400}`), true); ok {
		t.Fatal("a number beyond a double was kept")
	}
	if _, ok := StorableJSON([]byte(`{} {}`), true); ok {
		t.Fatal("two values were taken as one")
	}
}

// HasLoneSurrogate finds \u escapes of surrogates that are not a valid
// pair, which encoding/json would read as U+FFFD.
func TestHasLoneSurrogate(t *testing.T) {
	for _, tc := range []struct {
		desc, raw string
		want      bool
	}{
		{"high at the end", `"txn-\ud800"`, true},
		{"low at the end", `"txn-\udfff"`, true},
		{"upper-case hex", `"\uD800x"`, true},
		{"high then a letter escape", `"\ud800\u0041"`, true},
		{"high then a high", `"\ud800\ud800"`, true},
		{"high then another escape", `"\ud800\n"`, true},
		{"high cut short", `"\ud800\udc"`, true},
		{"low then high", `"\udc00\ud800"`, true},
		{"in a key", `{"\udc00":1}`, true},
		{"second of two pairs broken", `["\ud83d\ude00","\ud83d"]`, true},
		{"valid pair", `"\ud83d\ude00"`, false},
		{"U+FFFD escaped", `"txn-\ufffd"`, false},
		{"U+FFFD raw", "\"txn-\uFFFD\"", false},
		{"escaped backslash before u", `"\\ud800"`, false},
		{"escaped backslash, then a real escape", `"\\\ud800"`, true},
		{"ordinary escapes", `"a\n\t\"\u00e9\u0000"`, false},
		{"no escapes", `{"a":[1,2,"b"]}`, false},
		{"empty", ``, false},
		{"trailing backslash", `\`, false},
		{"short u escape", `"\u12"`, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := HasLoneSurrogate([]byte(tc.raw)); got != tc.want {
				t.Fatalf("HasLoneSurrogate(%s) = %v, want %v", tc.raw, got, tc.want)
			}
		})
	}
}
