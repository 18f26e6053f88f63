package web

import (
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// methodChoice is one payout method the form offers.
type methodChoice struct{ Value, Label string }

var payoutMethods = []methodChoice{
	{"bank_transfer", "Bank transfer"},
	{"paypal", "PayPal"},
	{"wise", "Wise"},
}

// methodField is a field of a payout method's details: its key in the
// API's details, the form field that carries it and its label.
type methodField struct {
	Key, Name, Label, Hint string
	Required               bool
}

// bankFields are the details of a bank transfer (ledger/payoutmethod.go):
// holder and country required, an IBAN or an account number.
var bankFields = []methodField{
	{Key: "account_holder", Name: "account_holder", Label: "Account holder", Required: true},
	{Key: "country", Name: "country", Label: "Country of the account", Hint: "Two letters, as DE or US.", Required: true},
	{Key: "iban", Name: "iban", Label: "IBAN", Hint: "Give an IBAN or an account number."},
	{Key: "account_number", Name: "account_number", Label: "Account number"},
	{Key: "swift_bic", Name: "swift_bic", Label: "SWIFT/BIC"},
	{Key: "bank_name", Name: "bank_name", Label: "Bank name"},
}

// emailFields are the one detail of PayPal and of Wise, each in a field
// of its own: without JavaScript every method's fields show at once.
var emailFields = map[string]methodField{
	"paypal": {Key: "email", Name: "paypal_email", Label: "PayPal email", Required: true},
	"wise":   {Key: "email", Name: "wise_email", Label: "Wise email", Required: true},
}

// methodFormFields are all the fields of the payout method form.
func methodFormFields() []string {
	names := []string{"method"}
	for _, f := range bankFields {
		names = append(names, f.Name)
	}
	return append(names, emailFields["paypal"].Name, emailFields["wise"].Name)
}

// methodInput is a field of the method form as shown: what was sent and
// the API's message about it, when the form is shown again after a
// refusal.
type methodInput struct {
	Field      methodField
	Value, Err string
}

func methodInputOf(f *form, field methodField) methodInput {
	if !f.Is("method") {
		return methodInput{Field: field}
	}
	return methodInput{Field: field, Value: f.Value(field.Name), Err: f.Err(field.Name)}
}

// methodInputs are the fields of the method form, per fieldset.
func methodInputs(f *form) map[string]any {
	bank := make([]methodInput, len(bankFields))
	for i, b := range bankFields {
		bank[i] = methodInputOf(f, b)
	}
	return map[string]any{
		"BankInputs":  bank,
		"PayPalInput": methodInputOf(f, emailFields["paypal"]),
		"WiseInput":   methodInputOf(f, emailFields["wise"]),
	}
}

// payoutMethod reads the partner's payout method, masked; nil when none
// is on file (the API's 404).
func (p *Pages) payoutMethod(c *fiber.Ctx) (*apiclient.PayoutMethodResponse, error) {
	ctx, auth := p.as(c)
	resp, err := p.api.GetPayoutMethodWithResponse(ctx, auth)
	if err = apiCheck(resp, err); err != nil {
		if re, ok := asResponseError(err); ok && re.Status == fiber.StatusNotFound {
			return nil, nil
		}
		return nil, err
	}
	return resp.JSON200, nil
}

// detailRow is one masked detail of the method on file.
type detailRow struct{ Label, Value string }

// methodDetails lists the masked details on file in the form's order,
// each under its label; a key the form does not know keeps its name.
func methodDetails(m *apiclient.PayoutMethodResponse) []detailRow {
	if m == nil {
		return nil
	}
	d := m.Data.Details
	var out []detailRow
	seen := map[string]bool{}
	fields := bankFields
	if f, ok := emailFields[string(m.Data.Method)]; ok {
		fields = []methodField{{Key: f.Key, Label: "Email"}}
	}
	for _, f := range fields {
		if v, ok := d[f.Key]; ok {
			out = append(out, detailRow{f.Label, v})
			seen[f.Key] = true
		}
	}
	rest := make([]string, 0, len(d))
	for k := range d {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, detailRow{k, d[k]})
	}
	return out
}

// methodLabel names a payout method for people.
func methodLabel(m string) string {
	for _, c := range payoutMethods {
		if c.Value == m {
			return c.Label
		}
	}
	return m
}

// partnerSetPayoutMethod is the payout method form: the chosen method and
// the fields of its fieldset (the other fieldsets' fields are ignored).
// The API checks them; its refusal shows next to the field it names.
func (p *Pages) partnerSetPayoutMethod(c *fiber.Ctx) error {
	f := readForm(c, "method", methodFormFields()...)
	method := f.Value("method")
	details := map[string]string{}
	if ef, ok := emailFields[method]; ok {
		details[ef.Key] = f.Value(ef.Name)
	} else if method == "bank_transfer" {
		for _, bf := range bankFields {
			// An optional field left empty is not sent: the API reads a
			// sent IBAN or account number as one to check.
			if v := f.Value(bf.Name); v != "" || bf.Required {
				details[bf.Key] = v
			}
		}
	}
	ctx, auth := p.as(c)
	resp, err := p.api.PutPayoutMethodWithResponse(ctx, apiclient.PayoutMethodRequest{
		Method: apiclient.PayoutMethodRequestMethod(method), Details: details,
	}, auth)
	if err = apiCheck(resp, err); err != nil {
		if status, shown := refuseMethod(f, err); shown {
			return p.showPartnerPayouts(c, status, f)
		}
		return err
	}
	return p.flash(c, "Payout method saved: "+methodLabel(string(resp.JSON200.Data.Method))+".", "/partner/payouts")
}

// refuseMethod places the API's refusal of a payout method: its message
// names the detail as "details.<key> …", which is the form field of that
// key in the chosen method's fieldset; anything else is placed as any
// form's refusal.
func refuseMethod(f *form, err error) (int, bool) {
	re, ok := asResponseError(err)
	if !ok || re.Status >= 500 || re.Status == fiber.StatusUnauthorized {
		return 0, false
	}
	if rest, found := strings.CutPrefix(re.Message, "details."); found {
		key, _, _ := strings.Cut(rest, " ")
		name := key
		if ef, ok := emailFields[f.Value("method")]; ok && key == ef.Key {
			name = ef.Name
		}
		if _, known := f.Values[name]; known && name != "method" {
			f.Errors[name] = re.Message
			return re.Status, true
		}
	}
	if strings.HasPrefix(re.Message, "method ") {
		f.Errors["method"] = re.Message
		return re.Status, true
	}
	f.Error = re.Message
	return re.Status, true
}

// partnerDeletePayoutMethod is the form that removes the payout method.
func (p *Pages) partnerDeletePayoutMethod(c *fiber.Ctx) error {
	ctx, auth := p.as(c)
	resp, err := p.api.DeletePayoutMethodWithResponse(ctx, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return p.flash(c, "Payout method removed.", "/partner/payouts")
}
