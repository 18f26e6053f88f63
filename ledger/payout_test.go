package ledger

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestPlanBrandPayout(t *testing.T) {
	for _, tc := range []struct {
		desc             string
		balance, minimum int64
		wantAmount       int64
		wantSkip         string
	}{
		{"whole balance when due", 6000, 5000, 6000, ""},
		{"exactly the minimum", 5000, 5000, 5000, ""},
		{"below the minimum", 4999, 5000, 0, PayoutSkipBelowMinimum},
		{"zero", 0, 0, 0, PayoutSkipNotDue},
		{"negative after a clawback", -300, 0, 0, PayoutSkipNotDue},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			amount, skip := PlanBrandPayout(tc.balance, tc.minimum)
			if amount != tc.wantAmount || skip != tc.wantSkip {
				t.Fatalf("PlanBrandPayout(%d, %d) = %d %q", tc.balance, tc.minimum, amount, skip)
			}
		})
	}
}

func TestPlanPartnerPayout(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		desc             string
		balance, minimum int64
		requested        *int64
		want             int64
		code, msg        string
	}{
		{"OK whole balance", 6000, 5000, nil, 6000, "", ""},
		{"OK part of it", 6000, 1000, n(2500), 2500, "", ""},
		{"OK all of it by amount", 6000, 0, n(6000), 6000, "", ""},
		{"ErrNothing", 0, 5000, nil, 0, EConflict, MsgPayoutNothingDue + "0.00 USD"},
		{"ErrNegative", -100, 0, n(100), 0, EConflict, MsgPayoutNothingDue + "-1.00 USD"},
		{"ErrBelowMinimumWhole", 4000, 5000, nil, 0, EConflict, MsgPayoutBelowMinimum + "50.00 USD; the approved balance is 40.00 USD"},
		{"ErrExceeds", 6000, 0, n(6001), 0, EInvalid, MsgPayoutExceeds + "60.00 USD"},
		{"ErrBelowMinimumAmount", 6000, 5000, n(4000), 0, EInvalid, MsgPayoutBelowMinimum + "50.00 USD"},
		{"ErrNotPositive", 6000, 0, n(0), 0, EInvalid, MsgPayoutAmount},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := PlanPartnerPayout(tc.balance, tc.minimum, tc.requested, USD)
			if tc.code == "" {
				if err != nil || got != tc.want {
					t.Fatalf("= %d, %v; want %d", got, err, tc.want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Message != tc.msg {
				t.Fatalf("err = %v, want %s %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestPayoutTransition(t *testing.T) {
	for _, tc := range []struct {
		from, next string
		changed    bool
		conflict   bool
	}{
		{PayoutPending, PayoutProcessing, true, false},
		{PayoutPending, PayoutPaid, true, false},
		{PayoutPending, PayoutFailed, true, false},
		{PayoutProcessing, PayoutPaid, true, false},
		{PayoutProcessing, PayoutFailed, true, false},
		{PayoutProcessing, PayoutProcessing, false, false},
		{PayoutPaid, PayoutPaid, false, false},
		{PayoutFailed, PayoutFailed, false, false},
		{PayoutPaid, PayoutFailed, false, true},
		{PayoutPaid, PayoutProcessing, false, true},
		{PayoutFailed, PayoutPaid, false, true},
		{PayoutFailed, PayoutProcessing, false, true},
	} {
		t.Run(tc.from+" to "+tc.next, func(t *testing.T) {
			changed, err := PayoutTransition(tc.from, tc.next)
			if changed != tc.changed || (err != nil) != tc.conflict {
				t.Fatalf("= %v, %v", changed, err)
			}
			if tc.conflict && (ErrorCode(err) != EConflict || !strings.Contains(err.Error(), "payout is already "+tc.from)) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestPlanPayoutRun(t *testing.T) {
	for _, tc := range []struct {
		desc                string
		requested, entries  []int64
		wantTodo, wantSkips string
	}{
		{"every partner with entries", nil, []int64{3, 1, 2}, "[1 2 3]", "[]"},
		{"named ones, sorted", []int64{9, 4}, []int64{4, 9}, "[4 9]", "[]"},
		{"duplicates and unknown", []int64{5, 7, 5, 8}, []int64{5, 7}, "[5 7]", "[{5 duplicate} {8 not_due}]"},
		{"none named", []int64{}, []int64{1}, "[]", "[]"},
	} {
		todo, skipped := PlanPayoutRun(tc.requested, tc.entries)
		if got := fmt.Sprint(todo); got != tc.wantTodo && !(len(todo) == 0 && tc.wantTodo == "[]") {
			t.Errorf("%s: todo %s, want %s", tc.desc, got, tc.wantTodo)
		}
		skips := []string{}
		for _, s := range skipped {
			skips = append(skips, fmt.Sprintf("{%d %s}", s.PartnerID, s.Reason))
		}
		if got := "[" + strings.Join(skips, " ") + "]"; got != tc.wantSkips {
			t.Errorf("%s: skipped %s, want %s", tc.desc, got, tc.wantSkips)
		}
	}
}

func TestPayoutCoverage(t *testing.T) {
	for _, tc := range []struct{ amount, carry, want int64 }{
		{2500, 0, 2500}, {3500, 2500, 6000}, {3500, -100, 3500}, {math.MaxInt64 - 1, 5, math.MaxInt64},
	} {
		if got := PayoutCoverage(tc.amount, tc.carry); got != tc.want {
			t.Errorf("PayoutCoverage(%d, %d) = %d, want %d", tc.amount, tc.carry, got, tc.want)
		}
	}
}

func TestSplitWithdrawal(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		amount   int64
		balances []int64
		want     []int64
		rest     int64
	}{
		{"first program first", 700, []int64{500, 400}, []int64{500, 200}, 0},
		{"skips negative programs", 300, []int64{-100, 400}, []int64{0, 300}, 0},
		{"never more than a program holds", 1000, []int64{500, 400}, []int64{500, 400}, 100},
		{"no programs", 250, nil, []int64{}, 250},
		{"nothing", 0, []int64{500}, []int64{0}, 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			parts, rest := SplitWithdrawal(tc.amount, tc.balances)
			if !slices.Equal(parts, tc.want) || rest != tc.rest {
				t.Fatalf("= %v, %d", parts, rest)
			}
			sum := rest
			for _, p := range parts {
				sum += p
			}
			if sum != tc.amount {
				t.Fatalf("parts sum to %d, want %d", sum, tc.amount)
			}
		})
	}
}

func TestMinimumPayoutMinor(t *testing.T) {
	for _, tc := range []struct {
		minimum string
		c       Currency
		want    int64
	}{
		{"50", USD, 5000},
		{"0.015", USD, 2}, // rounded up: a balance must reach it
		{"0", EUR, 0},
		{"50", VND, 50},
		{"1000000000000", USD, 100000000000000},
	} {
		if got := MinimumPayoutMinor(decimal.RequireFromString(tc.minimum), tc.c); got != tc.want {
			t.Errorf("MinimumPayoutMinor(%s %s) = %d, want %d", tc.minimum, tc.c, got, tc.want)
		}
	}
}

func TestCheckPayoutPartnerIDs(t *testing.T) {
	many := make([]int64, MaxPayoutPartners+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	if err := CheckPayoutPartnerIDs(many[:MaxPayoutPartners]); err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int64{many, {1, 0}, {-1}} {
		if err := CheckPayoutPartnerIDs(ids); ErrorCode(err) != EInvalid {
			t.Errorf("CheckPayoutPartnerIDs(%d ids) = %v", len(ids), err)
		}
	}
}

func TestPayoutWarnings(t *testing.T) {
	if w := PayoutWarnings(&Payout{Currency: USD}); len(w) != 0 {
		t.Fatalf("warnings without clawback: %v", w)
	}
	w := PayoutWarnings(&Payout{Currency: USD, ClawbackMinor: 3000})
	if len(w) != 1 || !strings.Contains(w[0], "30.00 USD") {
		t.Fatalf("warnings %v", w)
	}
}

func TestParsePayoutTexts(t *testing.T) {
	if s, err := ParseExternalReference(Some("  PP-1 ")); err != nil || s != "PP-1" {
		t.Fatalf("= %q, %v", s, err)
	}
	for _, in := range []Input[string]{{}, Some("   "), Some(strings.Repeat("x", 201)), BadInput[string]()} {
		if _, err := ParseExternalReference(in); ErrorCode(err) != EInvalid {
			t.Errorf("ParseExternalReference(%+v) = %v", in, err)
		}
	}
	if _, err := ParseFailureReason(Some(strings.Repeat("é", 500))); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFailureReason(Some(strings.Repeat("é", 501))); ErrorCode(err) != EInvalid {
		t.Fatal(err)
	}
}

func TestValidatePayoutMethod(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			method  string
			details map[string]string
			stored  map[string]string
			masked  map[string]string
		}{
			{"paypal", MethodPayPal, map[string]string{"email": " Jo.Doe@Example.com "},
				map[string]string{"email": "jo.doe@example.com"}, map[string]string{"email": "j***@example.com"}},
			{"wise", MethodWise, map[string]string{"email": "ann@wise.example"},
				map[string]string{"email": "ann@wise.example"}, map[string]string{"email": "a***@wise.example"}},
			{"bank with iban", MethodBankTransfer,
				map[string]string{"account_holder": " Ann Lee ", "iban": "de89 3704 0044 0532 0130 00", "swift_bic": "cobadeffxxx", "country": "de", "bank_name": "Commerzbank"},
				map[string]string{"account_holder": "Ann Lee", "iban": "DE89370400440532013000", "swift_bic": "COBADEFFXXX", "country": "DE", "bank_name": "Commerzbank"},
				map[string]string{"account_holder": "Ann Lee", "iban": "IBAN •••• 3000", "swift_bic": "COBADEFFXXX", "country": "DE", "bank_name": "Commerzbank"}},
			{"bank with account number", MethodBankTransfer,
				map[string]string{"account_holder": "Bo", "account_number": "12345678", "country": "US"},
				map[string]string{"account_holder": "Bo", "account_number": "12345678", "country": "US"},
				map[string]string{"account_holder": "Bo", "account_number": "•••• 5678", "country": "US"}},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				in, err := ValidatePayoutMethod(tc.method, tc.details)
				if err != nil {
					t.Fatal(err)
				}
				if !mapsEqual(in.Details, tc.stored) || !mapsEqual(in.Masked, tc.masked) {
					t.Fatalf("details %v masked %v", in.Details, in.Masked)
				}
			})
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			method  string
			details map[string]string
			msg     string
		}{
			{"method", "cash", map[string]string{}, MsgPayoutMethod},
			{"no details", MethodPayPal, nil, MsgPayoutDetails},
			{"missing email", MethodPayPal, map[string]string{}, "details.email is required for paypal"},
			{"two addresses", MethodWise, map[string]string{"email": "a@b.example, c@d.example"}, "details.email must be one email address"},
			{"named address", MethodWise, map[string]string{"email": "Ann <a@b.example>"}, "details.email must be one email address"},
			{"unknown field", MethodBankTransfer, map[string]string{"account_holder": "A", "country": "DE", "pin": "1"}, "details.pin is not a field of bank_transfer"},
			{"iban check digits", MethodBankTransfer, map[string]string{"account_holder": "A", "iban": "DE88370400440532013000", "country": "DE"}, "details.iban must be a valid IBAN"},
			{"account number", MethodBankTransfer, map[string]string{"account_holder": "A", "account_number": "1!", "country": "DE"}, "details.account_number must be 4 to 34 letters, digits, spaces or dashes"},
			{"bic", MethodBankTransfer, map[string]string{"account_holder": "A", "account_number": "1234", "swift_bic": "COBA", "country": "DE"}, "details.swift_bic must be a SWIFT/BIC code of 8 or 11 characters"},
			{"holder too long", MethodBankTransfer, map[string]string{"account_holder": strings.Repeat("a", 201), "account_number": "1234", "country": "DE"}, "details.account_holder must be 1 to 200 characters"},
			{"country", MethodBankTransfer, map[string]string{"account_holder": "A", "account_number": "1234", "country": "DEU"}, "details.country must be an ISO 3166 alpha-2 country code"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				_, err := ValidatePayoutMethod(tc.method, tc.details)
				var e *Error
				if !errors.As(err, &e) || e.Code != EInvalid || e.Message != tc.msg {
					t.Fatalf("err = %v, want %q", err, tc.msg)
				}
			})
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestValidIBAN(t *testing.T) {
	for _, s := range []string{"DE89370400440532013000", "GB82WEST12345698765432", "FR1420041010050500013M02606"} {
		if !ValidIBAN(s) {
			t.Errorf("ValidIBAN(%s) = false", s)
		}
	}
	for _, s := range []string{"DE89370400440532013001", "XX", "de89370400440532013000", "DE8937040044053201300!"} {
		if ValidIBAN(s) {
			t.Errorf("ValidIBAN(%s) = true", s)
		}
	}
}

func TestPayoutPaidEmailValidate(t *testing.T) {
	if err := (PayoutPaidEmail{ProgramName: "A", PartnerName: "B", Amount: "1.00 USD", ExternalReference: "R"}).Validate(); err == nil {
		t.Fatal("missing paid_at accepted")
	}
}
