package ledger

import (
	"math/big"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// A partner's payout method (issue 26 item 3): how the brand pays it. The
// details are free-form fields per method, checked for shape, stored
// sealed with SECRETS_KEY and shown back masked; only the brand's CSV
// export of payouts unseals them.

// Payout methods.
const (
	MethodBankTransfer = "bank_transfer"
	MethodPayPal       = "paypal"
	MethodWise         = "wise"
)

// PayoutMethod is a stored payout method. Details are the unsealed
// fields, filled only where the brand's export needs them; Masked is what
// every other reader sees.
type PayoutMethod struct {
	PartnerID int64
	Method    string
	Details   map[string]string
	Masked    map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PayoutMethodInput is a validated method: its details normalised
// (trimmed, IBAN and BIC upper-cased without spaces, email lower-cased)
// and their masked copy.
type PayoutMethodInput struct {
	Method  string
	Details map[string]string
	Masked  map[string]string
}

// The fields of each method: required ones, then optional ones.
var payoutMethodFields = map[string]struct{ required, optional []string }{
	MethodPayPal:       {required: []string{"email"}},
	MethodWise:         {required: []string{"email"}},
	MethodBankTransfer: {required: []string{"account_holder", "country"}, optional: []string{"iban", "account_number", "swift_bic", "bank_name"}},
}

var (
	ibanShape    = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$`)
	accountShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 -]{2,32}[A-Za-z0-9]$`)
	bicShape     = regexp.MustCompile(`^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$`)
	countryShape = regexp.MustCompile(`^[A-Z]{2}$`)
)

// maxDetailLen bounds a free-text detail (holder, bank name), in
// characters.
const maxDetailLen = 200

// PayoutDetailsError is the message of a detail of the wrong shape.
func PayoutDetailsError(field, what string) error {
	return NewError(EInvalid, "details."+field+" "+what)
}

// ValidatePayoutMethod checks a method and its details (every value
// already a string) and returns them normalised with the masked copy.
// Errors: EInvalid naming method or details.<field>.
func ValidatePayoutMethod(method string, details map[string]string) (PayoutMethodInput, error) {
	spec, ok := payoutMethodFields[method]
	if !ok {
		return PayoutMethodInput{}, NewError(EInvalid, MsgPayoutMethod)
	}
	if details == nil {
		return PayoutMethodInput{}, NewError(EInvalid, MsgPayoutDetails)
	}
	known := map[string]bool{}
	for _, f := range append(append([]string{}, spec.required...), spec.optional...) {
		known[f] = true
	}
	names := make([]string, 0, len(details))
	for k := range details {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			return PayoutMethodInput{}, PayoutDetailsError(k, "is not a field of "+method)
		}
	}
	out := PayoutMethodInput{Method: method, Details: map[string]string{}, Masked: map[string]string{}}
	for _, f := range spec.required {
		if strings.TrimSpace(details[f]) == "" {
			return PayoutMethodInput{}, PayoutDetailsError(f, "is required for "+method)
		}
	}
	if method == MethodPayPal || method == MethodWise {
		email, err := ParseEmailAddress(details["email"])
		if err != nil || strings.ContainsAny(details["email"], "<>") {
			return PayoutMethodInput{}, PayoutDetailsError("email", "must be one email address")
		}
		email = strings.ToLower(email)
		out.Details["email"], out.Masked["email"] = email, MaskEmail(email)
		return out, nil
	}
	for _, f := range []string{"account_holder", "bank_name"} {
		v := strings.TrimSpace(details[f])
		if _, sent := details[f]; !sent {
			continue
		}
		if v == "" || utf8.RuneCountInString(v) > maxDetailLen {
			return PayoutMethodInput{}, PayoutDetailsError(f, "must be 1 to 200 characters")
		}
		out.Details[f] = v
	}
	out.Masked["account_holder"] = out.Details["account_holder"]
	if v, ok := out.Details["bank_name"]; ok {
		out.Masked["bank_name"] = v
	}
	iban, hasIBAN := details["iban"]
	acct, hasAcct := details["account_number"]
	switch {
	case !hasIBAN && !hasAcct:
		return PayoutMethodInput{}, PayoutDetailsError("iban", "or details.account_number is required for bank_transfer")
	case hasIBAN:
		v := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(iban), " ", ""))
		if !ValidIBAN(v) {
			return PayoutMethodInput{}, PayoutDetailsError("iban", "must be a valid IBAN")
		}
		out.Details["iban"], out.Masked["iban"] = v, "IBAN •••• "+v[len(v)-4:]
	}
	if hasAcct {
		v := strings.TrimSpace(acct)
		if !accountShape.MatchString(v) {
			return PayoutMethodInput{}, PayoutDetailsError("account_number", "must be 4 to 34 letters, digits, spaces or dashes")
		}
		out.Details["account_number"], out.Masked["account_number"] = v, "•••• "+v[len(v)-4:]
	}
	if v, ok := details["swift_bic"]; ok {
		v = strings.ToUpper(strings.TrimSpace(v))
		if !bicShape.MatchString(v) {
			return PayoutMethodInput{}, PayoutDetailsError("swift_bic", "must be a SWIFT/BIC code of 8 or 11 characters")
		}
		out.Details["swift_bic"], out.Masked["swift_bic"] = v, v
	}
	country := strings.ToUpper(strings.TrimSpace(details["country"]))
	if !countryShape.MatchString(country) {
		return PayoutMethodInput{}, PayoutDetailsError("country", "must be an ISO 3166 alpha-2 country code")
	}
	out.Details["country"], out.Masked["country"] = country, country
	return out, nil
}

// ValidIBAN checks an IBAN's shape and its ISO 7064 mod-97 check digits.
func ValidIBAN(s string) bool {
	if !ibanShape.MatchString(s) {
		return false
	}
	var b strings.Builder
	for _, r := range s[4:] + s[:4] {
		if r >= 'A' && r <= 'Z' {
			b.WriteString(big.NewInt(int64(r - 'A' + 10)).String())
		} else {
			b.WriteRune(r)
		}
	}
	n, ok := new(big.Int).SetString(b.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// MaskEmail shows an email's first character and domain:
// "j***@example.com".
func MaskEmail(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at <= 0 {
		return "***"
	}
	r, _ := utf8.DecodeRuneInString(email)
	return string(r) + "***" + email[at:]
}
