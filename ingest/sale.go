package ingest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// trackSale is POST /api/v1/track/sale: the sale is committed with its
// commission before the call answers.
func (s *Server) trackSale(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	res, err := s.svc.Sales.RecordSale(c.UserContext(), saleRequest(f, programKeyOf(c)))
	if err != nil {
		return err
	}
	return c.JSON(saleBody(res))
}

// saleRequest reads a sale call's fields; the ledger validates them.
func saleRequest(f fields, key *ledger.ProgramKey) ledger.SaleRequest {
	r := ledger.SaleRequest{
		ProgramID:            key.ProgramID,
		TestKey:              key.IsTest(),
		TransactionID:        f.String("transaction_id"),
		AmountCents:          f.Int("amount_cents"),
		Currency:             f.String("currency"),
		CurrencyText:         string(f["currency"]),
		CustomerKey:          f.String("customer_key"),
		ClickID:              f.String("click_id"),
		OccurredAt:           f.String("occurred_at"),
		Provider:             f.String("provider"),
		ProviderPaymentID:    f.String("provider_payment_id"),
		Livemode:             f.Bool("livemode"),
		AdditionalData:       additionalData(f),
		SaleType:             f.String("sale_type"),
		IsRecurring:          f.Bool("is_recurring"),
		SubscriptionID:       f.String("subscription_id"),
		SubscriptionInterval: f.String("subscription_interval"),
		ProductID:            f.String("product_id"),
		EventName:            f.String("event_name"),
	}
	if raw, ok := f.raw("line_items"); ok {
		r.LineItems = json.RawMessage(raw)
	}
	return r
}

// additionalData reads the additional_data object of a tracking call. A
// program_id is kept as sent (a number or a string); anything but the
// key's program id is another program.
func additionalData(f fields) ledger.Input[ledger.AdditionalData] {
	obj := f.Object("additional_data")
	if !obj.OK() {
		return ledger.Input[ledger.AdditionalData]{Present: obj.Present, Bad: obj.Bad}
	}
	ad := ledger.AdditionalData{TestMode: obj.Value.Bool("test_mode")}
	if n := obj.Value.Int("program_id"); n.OK() {
		ad.ProgramID = ledger.Some(strconv.FormatInt(n.Value, 10))
	} else if str := obj.Value.String("program_id"); str.OK() {
		ad.ProgramID = ledger.Some(strings.TrimSpace(str.Value))
	} else if raw, ok := obj.Value.raw("program_id"); ok {
		ad.ProgramID = ledger.Some(string(raw))
	}
	return ledger.Some(ad)
}

// saleBody renders a recorded sale: its fields at the top level and again
// in data (the reference clients read either); a test sale in the shape
// the reference clients expect of test mode.
func saleBody(r *ledger.SaleResult) fiber.Map {
	if r.Test {
		return fiber.Map{"success": true, "message": r.Message,
			"data": fiber.Map{"eventId": r.SaleID, "programId": r.ProgramID, "test_mode": true}}
	}
	body := fiber.Map{"success": true, "sale_id": r.SaleID, "commission_id": r.CommissionID, "message": r.Message}
	data := make(fiber.Map, len(body))
	for k, v := range body {
		data[k] = v
	}
	body["data"] = data
	return body
}
