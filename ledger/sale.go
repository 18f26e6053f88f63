package ledger

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sale messages. The spec fixes the first ten to the letter.
const (
	MsgSaleTransactionID     = "transaction_id is required and must be a string"
	MsgSaleAmount            = "amount_cents is required and must be a positive integer"
	MsgSaleOccurredAt        = "occurred_at must be an ISO 8601 time within the last 30 days"
	MsgSaleProviderPaymentID = "provider_payment_id must be a string of 1 to 255 characters"
	MsgSaleLivemode          = "livemode must be a boolean"
	MsgCustomerNotFound      = "Customer not found. Provide customer_key or click_id."
	MsgNoAttribution         = "No affiliate attribution found for this customer in this program"
	MsgNoRelationship        = "No partner-program relationship found for this customer"
	MsgPartnerRequired       = "partnerId required to create commission"
	MsgDuplicateTransaction  = "Duplicate transaction_id. This sale has already been recorded."
	MsgCommissionFailed      = "Failed to create commission"
	MsgProgramMismatch       = "program_id does not match the API key"

	MsgAdditionalData = "additional_data must be an object"
	MsgTestMode       = "additional_data.test_mode must be a boolean"
	MsgSaleType       = "sale_type must be payment or subscription"
	MsgIsRecurring    = "is_recurring must be a boolean"
	MsgLineItems      = "line_items must be JSON without NUL characters or numbers beyond the range of a double"
)

// MsgUnsupportedCurrency is the spec's 422 message for a sale currency
// other than USD, EUR and VND.
func MsgUnsupportedCurrency(v string) string { return "currency " + v + " is not supported" }

// msgShortString is the message of an optional free-text field.
func msgShortString(field string) string {
	return field + " must be a string of at most 255 characters"
}

// Providers is the fixed list a sale's provider must be one of.
var Providers = []string{"stripe", "paddle", "lemonsqueezy", "paypal", "chargebee", "polar", "manual"}

// MsgSaleProvider is the message of a provider outside Providers.
var MsgSaleProvider = "provider must be one of: " + strings.Join(Providers, ", ")

// The occurred_at window of the spec.
const (
	SaleMaxAge   = 30 * 24 * time.Hour
	SaleMaxAhead = 5 * time.Minute
)

// Sale types.
const (
	SaleTypePayment      = "payment"
	SaleTypeSubscription = "subscription"
)

// Sale sources.
const (
	SourceAPI       = "api"
	SourceProcessor = "processor"
)

// AdditionalData is the additional_data object of a tracking call.
type AdditionalData struct {
	TestMode  Input[bool]
	ProgramID Input[string] // a program id as sent (number or string), in decimal
}

// SaleRequest is a sale call as the caller sent it, field by field, and
// what authentication established about the caller.
type SaleRequest struct {
	ProgramID int64 // the program of the key
	TestKey   bool  // the call was made with the program's test key

	TransactionID     Input[string]
	AmountCents       Input[int64]
	Currency          Input[string]
	CurrencyText      string // the currency as sent, for the 422 message of a non-string
	CustomerKey       Input[string]
	ClickID           Input[string]
	OccurredAt        Input[string]
	Provider          Input[string]
	ProviderPaymentID Input[string]
	Livemode          Input[bool]
	AdditionalData    Input[AdditionalData]

	// Fields the reference clients send beyond the spec.
	SaleType             Input[string]
	IsRecurring          Input[bool]
	SubscriptionID       Input[string]
	SubscriptionInterval Input[string]
	ProductID            Input[string]
	EventName            Input[string]
	LineItems            json.RawMessage
}

// Sale is a validated sale. Currency is empty until the program's currency
// applies; a test sale may leave AmountCents 0 for the default.
type Sale struct {
	ProgramID         int64
	TransactionID     string
	GeneratedID       bool // the id was made up for a test sale sent without one
	AmountCents       int64
	Currency          Currency
	CustomerKey       string
	ClickID           string
	OccurredAt        time.Time
	Provider          string
	ProviderPaymentID string
	Livemode          *bool
	SaleType          string
	IsRecurring       bool
	SubscriptionID    string
	ProductID         string
	Metadata          json.RawMessage // extra fields the schema has no column for
	IsTest            bool
	Source            string
}

// TestMode reports whether the call is a test call: made with the test key
// or with additional_data.test_mode true.
func (r SaleRequest) TestMode() bool {
	return r.TestKey || (r.AdditionalData.OK() && r.AdditionalData.Value.TestMode.OK() && r.AdditionalData.Value.TestMode.Value)
}

// Validate checks a sale call in the spec's order and returns the sale it
// describes. now is the service clock (the occurred_at window). Errors:
// EForbidden (additional_data.program_id names another program), EInvalid,
// EUnsupportedCurrency.
func (r SaleRequest) Validate(now time.Time) (*Sale, error) {
	test := r.TestMode()
	if err := CheckProgramID(r.AdditionalData, r.ProgramID); err != nil {
		return nil, err
	}
	s := &Sale{ProgramID: r.ProgramID, IsTest: test, Source: SourceAPI, SaleType: SaleTypePayment, OccurredAt: now}

	switch id := r.TransactionID; {
	case id.OK() && strings.TrimSpace(id.Value) != "" && utf8.RuneCountInString(id.Value) <= 255:
		s.TransactionID = id.Value
	case !id.Present && test:
		s.TransactionID = "test_txn_" + strconv.FormatInt(now.UnixMilli(), 10)
		s.GeneratedID = true
	default:
		return nil, NewError(EInvalid, MsgSaleTransactionID)
	}
	switch a := r.AmountCents; {
	case a.OK() && a.Value > 0 && a.Value <= MaxAmountCents:
		s.AmountCents = a.Value
	case !a.Present && test:
		// left 0: one major unit of the sale's currency, set once it is known
	default:
		return nil, NewError(EInvalid, MsgSaleAmount)
	}
	if r.Currency.Present {
		c, ok := ParseCurrency(strings.ToUpper(strings.TrimSpace(r.Currency.Value)))
		if r.Currency.Bad || !ok {
			text := r.Currency.Value
			if r.Currency.Bad {
				text = r.CurrencyText
			}
			return nil, NewError(EUnsupportedCurrency, MsgUnsupportedCurrency(text))
		}
		s.Currency = c
	}
	if r.OccurredAt.Present {
		t, ok := parseOccurredAt(r.OccurredAt.Value)
		if r.OccurredAt.Bad || !ok || t.Before(now.Add(-SaleMaxAge)) || t.After(now.Add(SaleMaxAhead)) {
			return nil, NewError(EInvalid, MsgSaleOccurredAt)
		}
		s.OccurredAt = t.UTC().Truncate(time.Microsecond)
	}
	if r.Provider.Present {
		p := strings.ToLower(strings.TrimSpace(r.Provider.Value))
		if r.Provider.Bad || !isProvider(p) {
			return nil, NewError(EInvalid, MsgSaleProvider)
		}
		s.Provider = p
	}
	if v := r.ProviderPaymentID; v.Present {
		if v.Bad || v.Value == "" || utf8.RuneCountInString(v.Value) > 255 {
			return nil, NewError(EInvalid, MsgSaleProviderPaymentID)
		}
		s.ProviderPaymentID = v.Value
	}
	if r.Livemode.Present {
		if r.Livemode.Bad {
			return nil, NewError(EInvalid, MsgSaleLivemode)
		}
		lm := r.Livemode.Value
		s.Livemode = &lm
	}
	if err := checkAdditionalData(r.AdditionalData); err != nil {
		return nil, err
	}
	if err := r.extras(s); err != nil {
		return nil, err
	}
	if v := r.CustomerKey; v.OK() {
		s.CustomerKey = strings.TrimSpace(v.Value)
	}
	if v := r.ClickID; v.OK() {
		s.ClickID = strings.TrimSpace(v.Value)
	}
	return s, nil
}

// CheckProgramID refuses an additional_data.program_id that names another
// program than the key's (Authentication rule 1). Errors: EForbidden.
func CheckProgramID(ad Input[AdditionalData], keyProgramID int64) error {
	if ad.OK() && ad.Value.ProgramID.OK() && ad.Value.ProgramID.Value != strconv.FormatInt(keyProgramID, 10) {
		return NewError(EForbidden, MsgProgramMismatch)
	}
	return nil
}

// checkAdditionalData reports a malformed additional_data object.
func checkAdditionalData(ad Input[AdditionalData]) error {
	if !ad.Present {
		return nil
	}
	if ad.Bad {
		return NewError(EInvalid, MsgAdditionalData)
	}
	if ad.Value.TestMode.Bad {
		return NewError(EInvalid, MsgTestMode)
	}
	return nil
}

// extras validates the reference clients' extra fields and stores them on
// the sale, in metadata when the schema has no column for them.
func (r SaleRequest) extras(s *Sale) error {
	if v := r.SaleType; v.Present {
		if v.Bad || (v.Value != SaleTypePayment && v.Value != SaleTypeSubscription) {
			return NewError(EInvalid, MsgSaleType)
		}
		s.SaleType = v.Value
	}
	if v := r.IsRecurring; v.Present {
		if v.Bad {
			return NewError(EInvalid, MsgIsRecurring)
		}
		s.IsRecurring = v.Value
	}
	meta := map[string]any{}
	for _, f := range []struct {
		name string
		in   Input[string]
		dst  *string
	}{
		{"subscription_id", r.SubscriptionID, &s.SubscriptionID},
		{"subscription_interval", r.SubscriptionInterval, nil},
		{"product_id", r.ProductID, &s.ProductID},
		{"event_name", r.EventName, nil},
	} {
		if !f.in.Present {
			continue
		}
		if f.in.Bad || utf8.RuneCountInString(f.in.Value) > 255 {
			return NewError(EInvalid, msgShortString(f.name))
		}
		if f.dst != nil {
			*f.dst = f.in.Value
		} else {
			meta[f.name] = f.in.Value
		}
	}
	if len(r.LineItems) > 0 {
		items, ok := StorableJSON(r.LineItems, false)
		if !ok {
			return NewError(EInvalid, MsgLineItems)
		}
		meta["line_items"] = items
	}
	if len(meta) > 0 {
		raw, err := json.Marshal(meta)
		if err != nil {
			return NewError(EInvalid, "line_items must be JSON")
		}
		s.Metadata = raw
	}
	return nil
}

func isProvider(p string) bool {
	for _, q := range Providers {
		if p == q {
			return true
		}
	}
	return false
}

// occurredAtLayouts are the ISO 8601 forms with an offset that occurred_at
// accepts: RFC 3339 (Z or ±hh:mm) and the ±hhmm offset without a colon.
var occurredAtLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700"}

// parseOccurredAt parses an ISO 8601 time that carries an offset and names
// a real date (February 30 is refused).
func parseOccurredAt(s string) (time.Time, bool) {
	for _, layout := range occurredAtLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// DefaultTestAmount is the amount of a test sale sent without amount_cents:
// one major unit of its currency.
func DefaultTestAmount(c Currency) int64 {
	n := int64(1)
	for i := int32(0); i < c.Exponent(); i++ {
		n *= 10
	}
	return n
}

// SaleResult is what a recorded sale answers.
type SaleResult struct {
	SaleID       int64
	ProgramID    int64
	CommissionID *int64 // nil when the sale earned no commission
	Test         bool
	Message      string
}

// Sale result messages.
const (
	MsgSaleRecorded     = "Sale recorded and commission created"
	MsgSaleNotFirst     = "Sale recorded; no commission: the program pays on a customer's first sale only"
	MsgSaleDurationOver = "Sale recorded; no commission: the commission duration for this customer has ended"
	MsgTestSaleRecorded = "Test sale recorded; no commission was created"
)

// SaleService records sales.
type SaleService interface {
	// RecordSale validates a sale call and records it with its commission
	// and platform fee in one transaction. Errors: EForbidden, EInvalid,
	// EUnsupportedCurrency, EDuplicateTransaction (Details["sale_id"]),
	// ENoAttribution, and EInternal "Failed to create commission" when the
	// sale was stored without its commission.
	RecordSale(ctx context.Context, req SaleRequest) (*SaleResult, error)
}
