package ledger

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// The public program page and the two program settings it brings (issue
// 24): a program's public address (slug) and how its applications are
// approved (partner_approval).

// Partner approval rules of a program.
const (
	ApprovalAuto   = "auto"
	ApprovalManual = "manual"
)

// Messages of the slug and partner_approval settings.
const (
	MsgSlug             = "slug must be 3 to 60 lowercase letters, digits or '-'"
	MsgSlugReserved     = "slug program-<number> is reserved for the program with that id"
	MsgSlugTaken        = "slug is already used by another program"
	MsgPartnerApproval  = "partner_approval must be one of: auto, manual"
	MsgPublicNotFound   = "program not found"
	defaultSlugPrefix   = "program-"
	publicSlugMaxLength = 60
)

var slugPattern = regexp.MustCompile(`^[a-z0-9-]{3,60}$`)

// DefaultSlug is the slug a program has until its brand picks one.
func DefaultSlug(programID int64) string { return defaultSlugPrefix + strconv.FormatInt(programID, 10) }

// ValidateSlug checks a slug a brand picks for a program: the shape, and
// program-<number> only as the program's own default (every new program
// gets program-<its id>, so another program may not take it first).
// Errors: EInvalid (MsgSlug, MsgSlugReserved).
func ValidateSlug(slug string, programID int64) error {
	if !slugPattern.MatchString(slug) {
		return NewError(EInvalid, MsgSlug)
	}
	if isDefaultSlug(slug) {
		if slug != DefaultSlug(programID) {
			return NewError(EInvalid, MsgSlugReserved)
		}
	}
	return nil
}

// isDefaultSlug reports whether slug has the shape of a default slug,
// program-<number>.
func isDefaultSlug(slug string) bool {
	rest, ok := strings.CutPrefix(slug, defaultSlugPrefix)
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// ValidPublicSlug reports whether s can be the slug of a public page (the
// public routes answer 404 for anything else without a query). A program
// is published once its brand names it: a default slug, program-<id>, is
// never public, so walking the ids finds no program, and nobody can apply
// to a program whose brand has not chosen to take applications.
func ValidPublicSlug(s string) bool {
	return len(s) <= publicSlugMaxLength && slugPattern.MatchString(s) && !isDefaultSlug(s)
}

// ParseApproval checks a partner_approval value. Errors: EInvalid.
func ParseApproval(s string) (string, error) {
	if s != ApprovalAuto && s != ApprovalManual {
		return "", NewError(EInvalid, MsgPartnerApproval)
	}
	return s, nil
}

// PublicProgram is what a program's public page shows: its terms, nothing
// private (no ids, no keys, no workspace).
type PublicProgram struct {
	Slug            string
	Name            string
	Domain          string
	CommissionType  CommissionType
	CommissionRate  decimal.Decimal
	DurationMonths  int
	CookieDuration  int
	HoldDays        int
	Currency        Currency
	PartnerApproval string
}

// CommissionWords describes the commission for a prospective partner:
// "20% of every sale for 12 months", "$5.00 for the first sale of each
// referred customer". A one-time type pays a customer's first sale only;
// a recurring one every sale for the duration (0: the customer's
// lifetime). Money is written by MoneyWords.
func (p *PublicProgram) CommissionWords() string {
	var amount string
	if p.CommissionType.IsPercent() {
		amount = p.CommissionRate.String() + "%"
	} else {
		amount = MoneyWords(p.CommissionRate, p.Currency)
	}
	of := " of "
	if !p.CommissionType.IsPercent() {
		of = " per "
	}
	if !p.CommissionType.IsRecurring() {
		if p.CommissionType.IsPercent() {
			return amount + " of the first sale of each referred customer"
		}
		return amount + " for the first sale of each referred customer"
	}
	s := amount + of + "sale"
	if p.CommissionType.IsPercent() {
		s = amount + " of every sale"
	}
	switch p.DurationMonths {
	case 0:
		return s + " for the customer's lifetime"
	case 1:
		return s + " for 1 month"
	}
	return s + " for " + strconv.Itoa(p.DurationMonths) + " months"
}

// MoneyWords writes an amount in major units for people: the currency's
// decimals (2 for USD and EUR, none for VND), thousands grouped with
// commas, "$" or "€" before it, "₫" after it: "$1,234.50", "€5.00",
// "50,000₫".
func MoneyWords(major decimal.Decimal, c Currency) string {
	s := major.StringFixed(c.Exponent())
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	num := b.String()
	if frac != "" {
		num += "." + frac
	}
	if neg {
		num = "-" + num
	}
	switch c {
	case USD:
		return "$" + num
	case EUR:
		return "€" + num
	case VND:
		return num + "₫"
	}
	return num + " " + string(c)
}
