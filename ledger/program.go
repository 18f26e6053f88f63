package ledger

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// CommissionType names how a program pays its partners.
type CommissionType string

// The four commission types of the spec.
const (
	Percent          CommissionType = "percent"
	Fixed            CommissionType = "fixed"
	RecurringPercent CommissionType = "recurring_percent"
	RecurringFixed   CommissionType = "recurring_fixed"
)

// IsPercent reports whether the rate is a percentage of the sale.
func (t CommissionType) IsPercent() bool { return t == Percent || t == RecurringPercent }

// IsRecurring reports whether every sale within the duration pays.
func (t CommissionType) IsRecurring() bool { return t == RecurringPercent || t == RecurringFixed }

func (t CommissionType) valid() bool {
	switch t {
	case Percent, Fixed, RecurringPercent, RecurringFixed:
		return true
	}
	return false
}

// Lead policies of a program.
const (
	LeadServerRequired = "server_required"
	LeadBrowserAllowed = "browser_allowed"
)

// Program defaults (contract: cookie 90 days, hold 30 days, USD).
const (
	DefaultCookieDuration = 90
	DefaultHoldDays       = 30
	DefaultCurrency       = USD
)

// Validation messages shared by CLI init, program settings and the operator
// API. The spec fixes the first six to the letter.
const (
	MsgProgramMissingFields = "Missing required fields: name, domain, commission_type, commission_rate"
	MsgCommissionRate       = "commission_rate must be a positive number"
	MsgCommissionRateCap    = "commission_rate is a percentage for this type and cannot exceed 100"
	MsgDurationMonths       = "duration_months must be a whole number of months (0 = lifetime)"
	MsgCookieDuration       = "cookie_duration must be a whole number of days from 1 to 365"
	MsgLeadAuth             = "lead_auth must be one of: server_required, browser_allowed"
	MsgHoldDays             = "hold_days must be a whole number of days from 0 to 365"
	MsgProgramCurrency      = "currency must be one of: USD, EUR, VND"
	MsgProgramName          = "name must be a string of 1 to 200 characters"
	MsgProgramDomain        = "domain must be a host name such as example.com"
	MsgCommissionRateMax    = "commission_rate of a fixed commission cannot exceed 1000000000"
	MsgCommissionRatePlaces = "commission_rate must have at most 4 decimal places"
)

// MaxFixedCommission bounds a fixed commission (major units of the
// program's currency): 10^9, in minor units 10^11 at most, so that every
// commission, and the sum of many in a balance, fits in 64 bits.
var MaxFixedCommission = decimal.NewFromInt(1_000_000_000)

// MaxCommissionRatePlaces is the most decimal places a commission_rate
// may have.
const MaxCommissionRatePlaces = 4

// MsgInvalidCommissionType is the spec's message for an unknown type.
func MsgInvalidCommissionType(v string) string {
	return "Invalid commission_type: " + v + ". Valid: percent, fixed, recurring_percent, recurring_fixed"
}

// Program is a brand's affiliate program.
type Program struct {
	ID              int64
	WorkspaceID     int64
	Name            string
	Domain          string
	CommissionType  CommissionType
	CommissionRate  decimal.Decimal
	DurationMonths  int
	CookieDuration  int
	LeadAuth        string
	HoldDays        int
	Currency        Currency
	Status          string
	APITokenMasked  string // masked live key; the only form of the key any read returns
	StripeSecretSet bool   // whether a processor webhook signing secret is configured
	Slug            string // the public page's address (settings only)
	PartnerApproval string // ApprovalAuto or ApprovalManual (settings only)
	Timezone        string // IANA name whose days the analytics count in (settings only)
	CreatedAt       time.Time
	UpdatedAt       time.Time

	// PartnerLinks lets partners create links with their own code, and
	// MinimumPayout (major units) is the smallest balance a payout is made
	// for (settings only; issue 26).
	PartnerLinks  bool
	MinimumPayout decimal.Decimal
}

// ProgramInput is a program as a caller describes it at creation or in an
// update. Absent fields keep their current (or default) value.
type ProgramInput struct {
	Name           Input[string]
	Domain         Input[string]
	CommissionType Input[string]
	CommissionRate Input[decimal.Decimal]
	DurationMonths Input[int64]
	CookieDuration Input[int64]
	LeadAuth       Input[string]
	HoldDays       Input[int64]
	Currency       Input[string]
}

// ValidateCreate checks a new program in the spec's order and returns the
// program it describes, defaults applied.
func (in ProgramInput) ValidateCreate() (Program, error) {
	if !in.Name.Present || !in.Domain.Present || !in.CommissionType.Present || !in.CommissionRate.Present {
		return Program{}, NewError(EInvalid, MsgProgramMissingFields)
	}
	p := Program{
		CookieDuration: DefaultCookieDuration,
		LeadAuth:       LeadServerRequired,
		HoldDays:       DefaultHoldDays,
		Currency:       DefaultCurrency,
		Status:         "active",
	}
	return p, in.apply(&p)
}

// ApplyUpdate validates the present fields of in, in the same order and
// with the same messages as creation, and applies them to p.
func (in ProgramInput) ApplyUpdate(p *Program) error {
	updated := *p
	if err := in.apply(&updated); err != nil {
		return err
	}
	*p = updated
	return nil
}

func (in ProgramInput) apply(p *Program) error {
	if in.Name.Present {
		name := strings.TrimSpace(in.Name.Value)
		if in.Name.Bad || name == "" || len(name) > 200 {
			return NewError(EInvalid, MsgProgramName)
		}
		p.Name = name
	}
	if in.Domain.Present {
		domain, ok := NormalizeDomain(in.Domain.Value)
		if in.Domain.Bad || !ok {
			return NewError(EInvalid, MsgProgramDomain)
		}
		p.Domain = domain
	}
	if in.CommissionType.Present {
		t := CommissionType(in.CommissionType.Value)
		if in.CommissionType.Bad || !t.valid() {
			return NewError(EInvalid, MsgInvalidCommissionType(in.CommissionType.Value))
		}
		p.CommissionType = t
	}
	if in.CommissionRate.Present {
		r := in.CommissionRate.Value
		if in.CommissionRate.Bad || !r.IsPositive() {
			return NewError(EInvalid, MsgCommissionRate)
		}
		// Four places are finer than any rate a brand sets (0.0001 %) and
		// keep the stored numeric short; trailing zeros are not places.
		if !r.Equal(r.Truncate(MaxCommissionRatePlaces)) {
			return NewError(EInvalid, MsgCommissionRatePlaces)
		}
		p.CommissionRate = r.Truncate(MaxCommissionRatePlaces)
	}
	// The cap depends on the type, so it is checked against the result
	// whichever of the two fields changed.
	if p.CommissionType.IsPercent() && p.CommissionRate.GreaterThan(decimal.NewFromInt(100)) {
		return NewError(EInvalid, MsgCommissionRateCap)
	}
	if !p.CommissionType.IsPercent() && p.CommissionRate.GreaterThan(MaxFixedCommission) {
		return NewError(EInvalid, MsgCommissionRateMax)
	}
	if in.DurationMonths.Present {
		v := in.DurationMonths.Value
		// Any whole number the column holds: the spec sets no upper bound.
		if in.DurationMonths.Bad || v < 0 || v > math.MaxInt32 {
			return NewError(EInvalid, MsgDurationMonths)
		}
		p.DurationMonths = int(v)
	}
	if in.CookieDuration.Present {
		v := in.CookieDuration.Value
		if in.CookieDuration.Bad || v < 1 || v > 365 {
			return NewError(EInvalid, MsgCookieDuration)
		}
		p.CookieDuration = int(v)
	}
	if in.LeadAuth.Present {
		v := in.LeadAuth.Value
		if in.LeadAuth.Bad || (v != LeadServerRequired && v != LeadBrowserAllowed) {
			return NewError(EInvalid, MsgLeadAuth)
		}
		p.LeadAuth = v
	}
	if in.HoldDays.Present {
		v := in.HoldDays.Value
		if in.HoldDays.Bad || v < 0 || v > 365 {
			return NewError(EInvalid, MsgHoldDays)
		}
		p.HoldDays = int(v)
	}
	if in.Currency.Present {
		c, ok := ParseCurrency(in.Currency.Value)
		if in.Currency.Bad || !ok {
			return NewError(EInvalid, MsgProgramCurrency)
		}
		p.Currency = c
	}
	return nil
}

// NormalizeDomain lower-cases a domain and strips a scheme, path and port
// the caller may have pasted ("https://Shop.example.com/x" is
// "shop.example.com"). It reports false for anything that is not a host name.
func NormalizeDomain(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return "", false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "", false
			}
		}
	}
	return s, true
}

// ProgramService reads and changes programs.
type ProgramService interface {
	// CreateProgram creates a program in a workspace with its live and test
	// keys, whose values are not returned. Errors: EInvalid, ENotFound
	// (workspace).
	CreateProgram(ctx context.Context, workspaceID int64, in ProgramInput) (*Program, error)
	// Program returns one program. Errors: ENotFound.
	Program(ctx context.Context, id int64) (*Program, error)
	// UpdateProgram applies a validated update. Errors: EInvalid, ENotFound.
	UpdateProgram(ctx context.Context, id int64, in ProgramInput) (*Program, error)
}
