package ledger

import (
	"testing"
	"time"
)

func validSale() SaleRequest {
	return SaleRequest{
		ProgramID:     7,
		TransactionID: Some("txn_1"),
		AmountCents:   Some(int64(4999)),
		CustomerKey:   Some("user-1"),
	}
}

func TestSaleValidate(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		desc string
		edit func(r *SaleRequest)
		code string
		msg  string
	}{
		{"OK", func(r *SaleRequest) {}, "", ""},
		{"ErrTransactionIDMissing", func(r *SaleRequest) { r.TransactionID = Input[string]{} }, EInvalid, MsgSaleTransactionID},
		{"ErrTransactionIDNumber", func(r *SaleRequest) { r.TransactionID = BadInput[string]() }, EInvalid, MsgSaleTransactionID},
		{"ErrTransactionIDBlank", func(r *SaleRequest) { r.TransactionID = Some("  ") }, EInvalid, MsgSaleTransactionID},
		{"ErrTransactionIDTooLong", func(r *SaleRequest) { r.TransactionID = Some(string(make([]byte, 256))) }, EInvalid, MsgSaleTransactionID},
		{"ErrAmountMissing", func(r *SaleRequest) { r.AmountCents = Input[int64]{} }, EInvalid, MsgSaleAmount},
		{"ErrAmountString", func(r *SaleRequest) { r.AmountCents = BadInput[int64]() }, EInvalid, MsgSaleAmount},
		{"ErrAmountZero", func(r *SaleRequest) { r.AmountCents = Some(int64(0)) }, EInvalid, MsgSaleAmount},
		{"ErrAmountNegative", func(r *SaleRequest) { r.AmountCents = Some(int64(-5)) }, EInvalid, MsgSaleAmount},
		{"ErrTransactionIDBeforeAmount", func(r *SaleRequest) { r.TransactionID = Input[string]{}; r.AmountCents = Input[int64]{} }, EInvalid, MsgSaleTransactionID},
		{"ErrCurrency", func(r *SaleRequest) { r.Currency = Some("GBP") }, EUnsupportedCurrency, "currency GBP is not supported"},
		{"ErrCurrencyNumber", func(r *SaleRequest) { r.Currency = BadInput[string](); r.CurrencyText = "840" }, EUnsupportedCurrency, "currency 840 is not supported"},
		{"CurrencyLowerCase", func(r *SaleRequest) { r.Currency = Some("eur") }, "", ""},
		{"ErrOccurredAtNoOffset", func(r *SaleRequest) { r.OccurredAt = Some("2026-03-15T10:00:00") }, EInvalid, MsgSaleOccurredAt},
		{"ErrOccurredAtDateOnly", func(r *SaleRequest) { r.OccurredAt = Some("2026-03-15") }, EInvalid, MsgSaleOccurredAt},
		{"ErrOccurredAtNotRealDate", func(r *SaleRequest) { r.OccurredAt = Some("2026-02-30T10:00:00Z") }, EInvalid, MsgSaleOccurredAt},
		{"ErrOccurredAtTooOld", func(r *SaleRequest) { r.OccurredAt = Some("2026-02-13T11:59:59Z") }, EInvalid, MsgSaleOccurredAt},
		{"OccurredAtThirtyDays", func(r *SaleRequest) { r.OccurredAt = Some("2026-02-13T12:00:00Z") }, "", ""},
		{"OccurredAtFiveMinutesAhead", func(r *SaleRequest) { r.OccurredAt = Some("2026-03-15T14:05:00+02:00") }, "", ""},
		{"OccurredAtOffsetWithoutColon", func(r *SaleRequest) { r.OccurredAt = Some("2026-03-15T07:00:00-0500") }, "", ""},
		{"ErrOccurredAtTooFarAhead", func(r *SaleRequest) { r.OccurredAt = Some("2026-03-15T12:05:01Z") }, EInvalid, MsgSaleOccurredAt},
		{"ErrOccurredAtNumber", func(r *SaleRequest) { r.OccurredAt = BadInput[string]() }, EInvalid, MsgSaleOccurredAt},
		{"ErrProvider", func(r *SaleRequest) { r.Provider = Some("square") }, EInvalid, "provider must be one of: stripe, paddle, lemonsqueezy, paypal, chargebee, polar, manual"},
		{"ProviderAnyCase", func(r *SaleRequest) { r.Provider = Some("Stripe") }, "", ""},
		{"ErrProviderPaymentIDEmpty", func(r *SaleRequest) { r.ProviderPaymentID = Some("") }, EInvalid, MsgSaleProviderPaymentID},
		{"ErrProviderPaymentIDTooLong", func(r *SaleRequest) { r.ProviderPaymentID = Some(string(make([]rune, 256))) }, EInvalid, MsgSaleProviderPaymentID},
		{"ErrProviderPaymentIDNumber", func(r *SaleRequest) { r.ProviderPaymentID = BadInput[string]() }, EInvalid, MsgSaleProviderPaymentID},
		{"ErrLivemode", func(r *SaleRequest) { r.Livemode = BadInput[bool]() }, EInvalid, MsgSaleLivemode},
		{"ErrAdditionalData", func(r *SaleRequest) { r.AdditionalData = BadInput[AdditionalData]() }, EInvalid, MsgAdditionalData},
		{"ErrTestModeString", func(r *SaleRequest) {
			r.AdditionalData = Some(AdditionalData{TestMode: BadInput[bool]()})
		}, EInvalid, MsgTestMode},
		{"ErrProgramIDOfAnotherProgram", func(r *SaleRequest) {
			r.AdditionalData = Some(AdditionalData{TestMode: Some(true), ProgramID: Some("8")})
		}, EForbidden, MsgProgramMismatch},
		{"ErrProgramIDBeforeFields", func(r *SaleRequest) {
			r.TransactionID = BadInput[string]()
			r.AdditionalData = Some(AdditionalData{ProgramID: Some("8")})
		}, EForbidden, MsgProgramMismatch},
		{"ProgramIDOfTheKey", func(r *SaleRequest) { r.AdditionalData = Some(AdditionalData{ProgramID: Some("7")}) }, "", ""},
		{"ErrSaleType", func(r *SaleRequest) { r.SaleType = Some("gift") }, EInvalid, MsgSaleType},
		{"ErrIsRecurring", func(r *SaleRequest) { r.IsRecurring = BadInput[bool]() }, EInvalid, MsgIsRecurring},
		{"ErrSubscriptionID", func(r *SaleRequest) { r.SubscriptionID = BadInput[string]() }, EInvalid, "subscription_id must be a string of at most 255 characters"},
		{"ErrOccurredAtBeforeProvider", func(r *SaleRequest) { r.OccurredAt = Some("x"); r.Provider = Some("x") }, EInvalid, MsgSaleOccurredAt},
		{"ErrCurrencyBeforeOccurredAt", func(r *SaleRequest) { r.OccurredAt = Some("x"); r.Currency = Some("JPY") }, EUnsupportedCurrency, "currency JPY is not supported"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := validSale()
			tc.edit(&r)
			s, err := r.Validate(now)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if s.TransactionID != "txn_1" || s.AmountCents != 4999 || s.ProgramID != 7 || s.IsTest {
					t.Fatalf("sale = %+v", s)
				}
				return
			}
			if ErrorCode(err) != tc.code || ErrorMessage(err) != tc.msg {
				t.Fatalf("err = %v, want %s %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestSaleValidateFields(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	r := validSale()
	r.Currency = Some("vnd")
	r.OccurredAt = Some("2026-03-15T13:30:00.250+02:00")
	r.Provider = Some("paddle")
	r.ProviderPaymentID = Some("pay_1")
	r.Livemode = Some(false)
	r.SaleType = Some(SaleTypeSubscription)
	r.IsRecurring = Some(true)
	r.SubscriptionID = Some("sub_1")
	r.SubscriptionInterval = Some("monthly")
	r.EventName = Some("renewal")
	r.LineItems = []byte(`[{"sku":"a","qty":2}]`)
	r.ClickID = Some(" 01j0000000000000000000000a ")
	s, err := r.Validate(now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Currency != VND || !s.OccurredAt.Equal(time.Date(2026, 3, 15, 11, 30, 0, 250e6, time.UTC)) ||
		s.Provider != "paddle" || s.ProviderPaymentID != "pay_1" || s.Livemode == nil || *s.Livemode ||
		s.SaleType != SaleTypeSubscription || !s.IsRecurring || s.SubscriptionID != "sub_1" ||
		s.ClickID != "01j0000000000000000000000a" || s.CustomerKey != "user-1" {
		t.Fatalf("sale = %+v", s)
	}
	// line_items is re-encoded for jsonb (which keeps no key order anyway).
	if got := string(s.Metadata); got != `{"event_name":"renewal","line_items":[{"qty":2,"sku":"a"}],"subscription_interval":"monthly"}` {
		t.Fatalf("metadata = %s", got)
	}
}

func TestSaleValidateTestMode(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		desc string
		r    SaleRequest
	}{
		{"TestKey", SaleRequest{ProgramID: 7, TestKey: true}},
		{"TestModeFlag", SaleRequest{ProgramID: 7, AdditionalData: Some(AdditionalData{TestMode: Some(true), ProgramID: Some("7")})}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s, err := tc.r.Validate(now)
			if err != nil {
				t.Fatal(err)
			}
			if !s.IsTest || !s.GeneratedID || s.TransactionID != "test_txn_1773576000000" || s.AmountCents != 0 {
				t.Fatalf("sale = %+v", s)
			}
		})
	}
	t.Run("ErrBadAmountStillRefused", func(t *testing.T) {
		r := SaleRequest{ProgramID: 7, TestKey: true, AmountCents: Some(int64(-1))}
		if _, err := r.Validate(now); ErrorMessage(err) != MsgSaleAmount {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("TestModeFalseIsReal", func(t *testing.T) {
		r := SaleRequest{ProgramID: 7, AdditionalData: Some(AdditionalData{TestMode: Some(false)})}
		if _, err := r.Validate(now); ErrorMessage(err) != MsgSaleTransactionID {
			t.Fatalf("err = %v", err)
		}
	})
	for _, c := range []struct {
		cur  Currency
		want int64
	}{{USD, 100}, {EUR, 100}, {VND, 1}} {
		if got := DefaultTestAmount(c.cur); got != c.want {
			t.Fatalf("DefaultTestAmount(%s) = %d, want %d", c.cur, got, c.want)
		}
	}
}
