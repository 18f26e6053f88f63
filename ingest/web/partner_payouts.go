package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// balanceRow is one program and currency of the partner's balances, with
// the name of its "Request payout" form (one form per row, so that a
// refusal shows in the form it answers).
type balanceRow struct {
	apiclient.PartnerBalance
	FormName   string
	CanRequest bool // an approved balance above zero: there is something to ask for
}

// partnerPayouts is GET /partner/payouts: the balances per program and
// currency with a form to request a payout of each, the payouts, and the
// payout method with the forms to set and remove it.
func (p *Pages) partnerPayouts(c *fiber.Ctx) error {
	return p.showPartnerPayouts(c, fiber.StatusOK, nil)
}

func (p *Pages) showPartnerPayouts(c *fiber.Ctx, status int, f *form) error {
	ctx, auth := p.as(c)
	bal, err := p.api.PartnerBalancesWithResponse(ctx, auth)
	if err = apiCheck(bal, err); err != nil {
		return err
	}
	payouts, err := p.api.ListPartnerPayoutsWithResponse(ctx, auth)
	if err = apiCheck(payouts, err); err != nil {
		return err
	}
	method, err := p.payoutMethod(c)
	if err != nil {
		return err
	}
	rows := make([]balanceRow, len(bal.JSON200.Data))
	for i, b := range bal.JSON200.Data {
		rows[i] = balanceRow{PartnerBalance: b, FormName: requestFormName(b.Program.Id, string(b.Currency)), CanRequest: positive(b.Balance)}
	}
	// The method form starts on the method on file, or shows what was sent.
	var label, selected string
	if method != nil {
		label = methodLabel(string(method.Data.Method))
		selected = string(method.Data.Method)
	}
	if f.Is("method") {
		selected = f.Value("method")
	}
	data := methodInputs(f)
	for k, v := range map[string]any{
		"Balances": rows, "Payouts": payouts.JSON200.Data, "Method": method, "MethodLabel": label,
		"MethodDetails": methodDetails(method), "Methods": payoutMethods, "Selected": selected,
	} {
		data[k] = v
	}
	return p.render(c, status, "partner_payouts", view{Title: "Your payouts", Tab: "payouts", Form: f, Data: data})
}

// requestFormName names the "Request payout" form of a program and
// currency.
func requestFormName(programID int64, currency string) string {
	return fmt.Sprintf("request-%d-%s", programID, strings.ToLower(currency))
}

// positive reports whether an exact amount is above zero.
func positive(n json.Number) bool {
	d, err := decimal.NewFromString(n.String())
	return err == nil && d.IsPositive()
}

// partnerRequestPayout is the "Request payout" form of a program: the
// amount (empty asks for the whole approved balance) in the row's
// currency. The API's refusal (below the program's minimum, more than the
// balance) shows in that row's form.
func (p *Pages) partnerRequestPayout(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	cur := strings.ToUpper(strings.TrimSpace(c.FormValue("currency")))
	f := readForm(c, requestFormName(id, cur), "amount")
	body := map[string]any{}
	if cur != "" {
		body["currency"] = cur
	}
	if v := f.Value("amount"); v != "" {
		body["amount"] = jsonNumberOrString(v)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.RequestPartnerPayoutWithBodyWithResponse(ctx, id, fiber.MIMEApplicationJSON, bytes.NewReader(raw), auth)
	if err = apiCheck(resp, err); err != nil {
		// A program the partner is not in has no form on the page to
		// show the refusal in: it is the error page.
		if re, ok := asResponseError(err); ok && re.Status == fiber.StatusNotFound {
			return err
		}
		if status, shown := f.refuse(err); shown {
			return p.showPartnerPayouts(c, status, f)
		}
		return err
	}
	d := resp.JSON201.Data
	return p.flash(c, "Payout "+fmt.Sprint(d.Id)+" of "+money(d.Amount, d.Currency)+" requested from "+d.Program.Name+".", "/partner/payouts")
}

// jsonNumberOrString sends what was typed as a JSON number, exactly, when
// it is one, and otherwise as a string, which the API refuses with its
// own message (a typed json.Number that is not a number fails to encode
// before the API sees it).
func jsonNumberOrString(v string) any {
	var n json.Number
	if json.Unmarshal([]byte(v), &n) == nil {
		return n
	}
	return v
}
