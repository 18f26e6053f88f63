package ingest

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// leadStyle renders lead errors in the platform envelope without a stable
// code (the spec gives codes to sale and refund errors only).
var leadStyle = errorStyle{internalMessage: "Lead tracking failed"}

// leadChain is the middleware of POST /api/v1/track/lead: 30 a minute per
// IP, and an optional program key (a missing header or an empty token means
// browser mode; only a token that matches no program answers 401).
func (s *Server) leadChain(h fiber.Handler) []fiber.Handler {
	return []fiber.Handler{withStyle(leadStyle), s.rateLimit("lead", limitLead, byIP),
		s.requireProgramKey(keyAuth{optional: true}), h}
}

// Success messages of a lead call.
const (
	msgLeadTracked  = "Lead tracked successfully"
	msgLeadTestMode = "Test lead recorded"
)

// trackLead is POST /api/v1/track/lead, in server mode with a program key
// and in browser mode without one.
func (s *Server) trackLead(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	req, err := leadInput(f).Validate(programKeyOf(c))
	if err != nil {
		return err
	}
	res, err := s.svc.Leads.TrackLead(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusOK).JSON(leadBody(res))
}

// leadInput reads a lead body: the spec's fields and the extra ones the
// reference clients send.
func leadInput(f fields) ledger.LeadInput {
	in := ledger.LeadInput{
		ClickID:        f.String("click_id"),
		CustomerKey:    f.String("customer_key"),
		Email:          f.String("email"),
		SessionID:      f.String("session_id"),
		PageURL:        f.String("page_url"),
		EventName:      f.String("event_name"),
		ClickIDs:       f.Strings("click_ids"),
		ProgramID:      leadIDField(f, "program_id"),
		HasAttribution: f.Bool("has_attribution"),
		DebugMode:      f.Bool("debug_mode"),
	}
	data := f.Object("additional_data")
	if data.Present {
		in.AdditionalData = ledger.Input[struct{}]{Present: true, Bad: data.Bad}
	}
	if data.OK() {
		in.TestMode = data.Value.Bool("test_mode")
		in.DataProgramID = leadIDField(data.Value, "program_id")
		in.DataEventName = data.Value.String("event_name")
	}
	return in
}

// leadIDField reads an id sent as a JSON integer or a string, as text.
func leadIDField(f fields, name string) ledger.Input[string] {
	if n := f.Int(name); n.OK() {
		return ledger.Some(strconv.FormatInt(n.Value, 10))
	}
	return f.String(name)
}

// leadBody is the success body: the fields at the top level and repeated
// in data. A browser-mode lead on a server_required program adds
// provisional: true, in both places; nothing else differs between modes.
// A test-mode lead answers as the reference clients expect: success,
// message and data{eventId, programId, test_mode}.
func leadBody(r *ledger.LeadResult) fiber.Map {
	var v fiber.Map
	if r.Test {
		v = fiber.Map{"success": true, "message": msgLeadTestMode, "eventId": r.LeadID, "programId": r.ProgramID, "test_mode": true}
	} else {
		v = fiber.Map{"success": true, "message": msgLeadTracked, "lead_id": r.LeadID, "program_id": r.ProgramID, "click_id": r.ClickID}
		if r.Provisional {
			v["provisional"] = true
		}
	}
	body := make(fiber.Map, len(v)+1)
	for k, x := range v {
		body[k] = x
	}
	body["data"] = v
	return body
}

// msgCustomerProgramID is the operator's customer lookup without a program.
const msgCustomerProgramID = "program_id is required and must be a positive integer"

// opFindCustomer is the operator's GET /customers?program_id=&customer_key=
// (or &click_id=).
func (s *Server) opFindCustomer(c *fiber.Ctx) error {
	programID, err := strconv.ParseInt(c.Query("program_id"), 10, 64)
	if err != nil || programID <= 0 {
		return invalid(msgCustomerProgramID)
	}
	q := ledger.CustomerQuery{ProgramID: programID, CustomerKey: c.Query("customer_key"), ClickID: c.Query("click_id")}
	if q.CustomerKey == "" && q.ClickID == "" {
		return invalid(ledger.MsgCustomerLookup)
	}
	v, err := s.svc.Leads.FindCustomer(c.UserContext(), q)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, customerJSON(v))
}

func customerJSON(v *ledger.CustomerView) fiber.Map {
	return fiber.Map{
		"id":           v.ID,
		"program_id":   v.ProgramID,
		"customer_key": nullIfEmpty(v.CustomerKey),
		"click_id":     nullIfEmpty(v.ClickID),
		"email":        nullIfEmpty(v.Email),
		"status":       v.Status,
		"partner_id":   v.PartnerID,
		"provisional":  v.Provisional,
		"is_test":      v.IsTest,
		"created_at":   formatTime(v.CreatedAt),
	}
}

// nullIfEmpty renders "" as JSON null.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
