package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// funcs are the helpers the templates call.
var funcs = template.FuncMap{
	"money":       money,
	"amount":      amountHTML,
	"count":       count,
	"date":        func(t time.Time) string { return t.UTC().Format("2 Jan 2006") },
	"datetime":    func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04 UTC") },
	"trend":       trend,
	"asset":       assetURL,
	"deref":       deref,
	"derefInt":    func(p *int64) int64 { return derefOr(p, 0) },
	"chart":       func(c chart) template.HTML { return c.SVG() },
	"lower":       strings.ToLower,
	"programTabs": func() []tab { return programTabs },
	"partnerTabs": func() []tab { return partnerTabs },
	"fieldOf": func(f *form, name, label, typ string) field {
		return field{Form: f, Name: name, Label: label, Type: typ}
	},
	// Listings and forms of several values.
	"minorAmount": minorAmount,
	"dict":        dict,
	"list":        func(v ...any) []any { return v },
	// partner money pages: whether an exact amount is above zero (a
	// payout's clawback is shown only then).
	"positive": positive,
	// formFor is the page's submitted form when it is the named one, else
	// nil (whose Value and Err are empty): a page with many forms fills
	// and marks only the one that was sent.
	"formFor": func(f *form, name string) *form {
		if f.Is(name) {
			return f
		}
		return nil
	},
}

// money formats an exact amount in major units of its currency with the
// currency's own decimals (VND has none) and thousands separators, as
// "1,234.50 USD". The page's script re-formats it in the reader's locale
// (Intl.NumberFormat) from the data attributes the template writes beside
// it; without script this form stays.
func money(amount any, currency any) string {
	cur := ledger.Currency(strings.ToUpper(fmt.Sprint(currency)))
	d, err := decimal.NewFromString(fmt.Sprint(amount))
	if err != nil {
		return fmt.Sprint(amount) + " " + string(cur)
	}
	exp := int32(2)
	if _, ok := ledger.ParseCurrency(string(cur)); ok {
		exp = cur.Exponent()
	}
	s := d.StringFixedBank(exp)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	out := group(whole)
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out + " " + string(cur)
}

// field is a labelled input of a form, for the "field" partial: its
// label, its value as sent, and the API's message next to it.
type field struct {
	Form              *form
	Name, Label, Type string
}

// amountHTML is money in a span the page's script re-formats in the
// reader's locale.
func amountHTML(amount any, currency any) template.HTML {
	a, c := fmt.Sprint(amount), strings.ToUpper(fmt.Sprint(currency))
	return template.HTML(`<span data-amount="` + template.HTMLEscapeString(a) + `" data-currency="` +
		template.HTMLEscapeString(c) + `">` + template.HTMLEscapeString(money(a, c)) + `</span>`)
}

// count formats a counter with thousands separators.
func count(n any) string {
	s := fmt.Sprint(n)
	if strings.HasPrefix(s, "-") {
		return "-" + group(s[1:])
	}
	return group(s)
}

func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	pre := len(digits) % 3
	if pre > 0 {
		b.WriteString(digits[:pre])
	}
	for i := pre; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// trend formats a change against the previous window: "+12.5 %", or
// "new" when there was nothing before.
func trend(v any) string {
	switch x := v.(type) {
	case nil:
		return "new"
	case *json.Number:
		if x == nil {
			return "new"
		}
		return trend(*x)
	case json.Number:
		s := x.String()
		if !strings.HasPrefix(s, "-") && s != "0" {
			s = "+" + s
		}
		return s + " %"
	}
	return fmt.Sprint(v)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}

// minorAmount is amount for an API value in minor units (an event's
// amount_cents): exact, in major units of its currency.
func minorAmount(minor *int64, currency *string) template.HTML {
	if minor == nil {
		return ""
	}
	cur := ledger.Currency(strings.ToUpper(deref(currency)))
	return amountHTML(ledger.MinorToMajor(*minor, cur).String(), cur)
}

// dict builds a map from key, value pairs, to pass several values to a
// shared template ({{template "field" (dict "Name" "x" "Label" "X")}}).
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}
