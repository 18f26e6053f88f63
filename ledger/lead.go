package ledger

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A lead is a customer's signup. It arrives in server mode (with the
// program's API key, from the brand's backend) or in browser mode (no key,
// from the tracker on the brand's page, attributed by its click id). On a
// program whose lead_auth is server_required, a browser-mode lead is stored
// as provisional: it does not count, does not save the customer key and
// does not move the customer's funnel status until it settles, when a
// server-mode lead or a qualifying processor payment arrives for the same
// customer. A customer has at most one lead.

// Lead modes.
const (
	LeadModeServer  = "server"
	LeadModeBrowser = "browser"
)

// How a lead settled (leads.settled_by).
const (
	SettledByServerLead       = "server_lead"
	SettledByProcessorPayment = "processor_payment"
	SettledByBrowserAllowed   = "browser_allowed"
)

// The spec's messages for leads, to the letter.
const (
	MsgLeadIDRequired       = "click_id or customer_key is required"
	MsgLeadClickIDRequired  = "click_id is required when no API key is sent"
	MsgLeadCustomerNotFound = "Customer not found. Provide a valid click_id or customer_key."
	MsgLeadOtherProgram     = "Customer does not belong to this program"
	MsgProgramIDMismatch    = "program_id does not match the API key"
)

// MsgLeadStatus is the spec's message for a customer already at lead or a
// later funnel stage.
func MsgLeadStatus(status string) string {
	return "Customer status cannot be updated to lead. Current status: " + status
}

// Our messages for lead fields of the wrong shape (the spec names none).
const (
	MsgLeadClickID        = "click_id must be a string of 1 to 200 letters, digits, '-' or '_'"
	MsgLeadCustomerKey    = "customer_key must be a string of 1 to 255 characters without control characters"
	MsgLeadSessionID      = "session_id must be a string of at most 255 characters"
	MsgLeadPageURL        = "page_url must be a string of at most 2048 characters"
	MsgLeadEventName      = "event_name must be a string of at most 100 characters"
	MsgLeadClickIDs       = "click_ids must be an array of at most 50 click ids"
	MsgLeadProgramID      = "program_id must be an integer or a string of at most 64 characters"
	MsgLeadHasAttribution = "has_attribution must be a boolean"
	MsgLeadDebugMode      = "debug_mode must be a boolean"
	MsgLeadAdditionalData = "additional_data must be an object"
	MsgLeadTestMode       = "additional_data.test_mode must be a boolean"
	MsgLeadDataProgramID  = "additional_data.program_id must be an integer or a string of at most 64 characters"
	MsgLeadDataEventName  = "additional_data.event_name must be a string of at most 100 characters"
	// A test-mode lead without a key names its program by program_id (or
	// by a click of the program).
	MsgLeadTestProgram = "additional_data.program_id is required with test_mode when no API key is sent"
	// The click endpoint's spec message for a program id that matches no
	// program, reused for a test-mode lead's program_id.
	MsgUnknownProgramID = "Unknown program_id"
)

// Field limits of a lead.
const (
	maxClickIDLen     = 200
	maxCustomerKeyLen = 255
	maxSessionIDLen   = 255
	maxPageURLLen     = 2048
	maxEventNameLen   = 100
	maxClickIDs       = 50
	maxProgramIDLen   = 64
)

// clickIDPattern is the shape of any click id a caller may send: ours are
// 26-character ULIDs; the alphabet is Stripe's client_reference_id one,
// where the tracker also writes click ids.
var clickIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// ValidClickIDShape reports whether s can be a click id. A value of this
// shape that is not one of our ids simply resolves to no click.
func ValidClickIDShape(s string) bool {
	return len(s) <= maxClickIDLen && clickIDPattern.MatchString(s)
}

// ValidCustomerKey reports whether s can be a customer key: 1 to 255
// characters, not only spaces, no control characters.
func ValidCustomerKey(s string) bool {
	if !utf8.ValidString(s) || strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > maxCustomerKeyLen {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// LeadInput is a lead request as the caller sent it. Empty strings count as
// absent (forms and SDKs send "" for a missing value).
type LeadInput struct {
	ClickID        Input[string]
	CustomerKey    Input[string]
	Email          Input[string]
	SessionID      Input[string]
	PageURL        Input[string]
	EventName      Input[string]   // top level
	ClickIDs       Input[[]string] // the browser's click history: validated, not used
	ProgramID      Input[string]   // top level (the browser SDK sends it), as text
	HasAttribution Input[bool]     // browser SDK: validated, not used
	DebugMode      Input[bool]     // browser SDK: validated, not used
	AdditionalData Input[struct{}] // Bad when not an object
	TestMode       Input[bool]     // additional_data.test_mode
	DataProgramID  Input[string]   // additional_data.program_id, as text
	DataEventName  Input[string]   // additional_data.event_name
}

// LeadRequest is a validated lead: what the lead service records.
type LeadRequest struct {
	Mode        string // LeadModeServer or LeadModeBrowser
	ProgramID   int64  // server mode: the key's program
	Test        bool   // test mode, or a call made with the program's test key
	ClickID     string
	CustomerKey string
	Email       string // normalized (lower case)
	SessionID   string
	PageURL     string
	EventName   string
	// ProgramHint is the program a browser-mode caller names with
	// program_id ("" when none): a click of another program is refused.
	ProgramHint string
}

func present(in Input[string]) bool { return in.Present && !(in.OK() && in.Value == "") }

// Validate checks a lead in the spec's order: one of click_id and
// customer_key; click_id in browser mode; then the shape of every field;
// then, with a key, that any program_id sent names the key's program. key
// is nil in browser mode (no header, or an empty token).
func (in LeadInput) Validate(key *ProgramKey) (LeadRequest, error) {
	hasClick, hasKey := present(in.ClickID), present(in.CustomerKey)
	if !hasClick && !hasKey {
		return LeadRequest{}, NewError(EInvalid, MsgLeadIDRequired)
	}
	if key == nil && !hasClick {
		return LeadRequest{}, NewError(EInvalid, MsgLeadClickIDRequired)
	}
	r := LeadRequest{Mode: LeadModeBrowser}
	if key != nil {
		r.Mode, r.ProgramID, r.Test = LeadModeServer, key.ProgramID, key.IsTest()
	}
	var err error
	check := func(ok bool, msg string) {
		if err == nil && !ok {
			err = NewError(EInvalid, msg)
		}
	}
	text := func(in Input[string], max int, msg string) string {
		if !present(in) {
			return ""
		}
		check(!in.Bad && utf8.ValidString(in.Value) && utf8.RuneCountInString(in.Value) <= max, msg)
		return in.Value
	}

	if hasClick {
		check(!in.ClickID.Bad && ValidClickIDShape(in.ClickID.Value), MsgLeadClickID)
		r.ClickID = in.ClickID.Value
	}
	if hasKey {
		check(!in.CustomerKey.Bad && ValidCustomerKey(in.CustomerKey.Value), MsgLeadCustomerKey)
		r.CustomerKey = in.CustomerKey.Value
	}
	if present(in.Email) {
		email, ok := NormalizeEmail(in.Email.Value)
		check(!in.Email.Bad && ok, MsgEmail)
		r.Email = email
	}
	r.SessionID = text(in.SessionID, maxSessionIDLen, MsgLeadSessionID)
	r.PageURL = text(in.PageURL, maxPageURLLen, MsgLeadPageURL)
	r.EventName = text(in.EventName, maxEventNameLen, MsgLeadEventName)
	if in.ClickIDs.Present {
		ok := !in.ClickIDs.Bad && len(in.ClickIDs.Value) <= maxClickIDs
		for _, id := range in.ClickIDs.Value {
			ok = ok && ValidClickIDShape(id)
		}
		check(ok, MsgLeadClickIDs)
	}
	topProgram := text(in.ProgramID, maxProgramIDLen, MsgLeadProgramID)
	check(!in.HasAttribution.Bad, MsgLeadHasAttribution)
	check(!in.DebugMode.Bad, MsgLeadDebugMode)
	check(!in.AdditionalData.Bad, MsgLeadAdditionalData)
	check(!in.TestMode.Bad, MsgLeadTestMode)
	dataProgram := text(in.DataProgramID, maxProgramIDLen, MsgLeadDataProgramID)
	if name := text(in.DataEventName, maxEventNameLen, MsgLeadDataEventName); r.EventName == "" {
		r.EventName = name
	}
	if err != nil {
		return LeadRequest{}, err
	}
	r.Test = r.Test || in.TestMode.Or(false)

	// A program key answers for its own program only (Authentication rule
	// 1; the spec's 403 names the test-mode case).
	if key != nil {
		for _, p := range []string{dataProgram, topProgram} {
			if p != "" && canonicalID(p) != strconv.FormatInt(key.ProgramID, 10) {
				return LeadRequest{}, NewError(EForbidden, MsgProgramIDMismatch)
			}
		}
		return r, nil
	}
	r.ProgramHint = canonicalID(dataProgram)
	if r.ProgramHint == "" {
		r.ProgramHint = canonicalID(topProgram)
	}
	return r, nil
}

// canonicalID writes a decimal id without sign or leading zeros, and
// leaves any other text as it is (it then names no program).
func canonicalID(s string) string {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return strconv.FormatInt(n, 10)
	}
	return s
}

// ParseProgramHint returns the program id a hint names, and false when it
// names none.
func ParseProgramHint(hint string) (int64, bool) {
	n, err := strconv.ParseInt(hint, 10, 64)
	return n, err == nil && n > 0
}

// LeadIsProvisional reports whether a lead sent in mode to a program with
// the lead policy leadAuth is stored as provisional.
func LeadIsProvisional(mode, leadAuth string) bool {
	return mode == LeadModeBrowser && leadAuth != LeadBrowserAllowed
}

// SettledByMode is how a lead that settles on arrival settled.
func SettledByMode(mode string) string {
	if mode == LeadModeBrowser {
		return SettledByBrowserAllowed
	}
	return SettledByServerLead
}

// CheckLeadTransition refuses a lead for a customer already at lead or a
// later funnel stage, with the spec's message.
func CheckLeadTransition(status string) error {
	if FunnelRank(status) >= FunnelRank(FunnelLead) {
		return NewError(EInvalid, MsgLeadStatus(status))
	}
	return nil
}

// AdvanceFunnel returns the status after a customer reaches target: the
// later of the two, since a customer never moves back.
func AdvanceFunnel(current, target string) string {
	if FunnelRank(target) > FunnelRank(current) {
		return target
	}
	return current
}

// LeadResult is a recorded lead.
type LeadResult struct {
	LeadID      int64
	ProgramID   int64
	CustomerID  int64  // 0 for a test-mode lead, which moves no customer
	ClickID     string // the customer's click ("" for a test-mode lead: the one sent)
	Provisional bool
	Test        bool // a test-mode lead (a lead of a test click's customer is stored flagged but is not one)
}

// Settlement asks to settle a customer's provisional lead, for example
// when a qualifying processor payment for the customer arrives.
type Settlement struct {
	ProgramID   int64
	CustomerID  int64
	CustomerKey string // optional: the key the payment names; else the provisional lead's
	Email       string // optional: the buyer's email; ignored when not an address
	By          string // SettledByProcessorPayment (the default) or SettledByServerLead
}

// SettleResult says what a settlement did.
type SettleResult struct {
	Settled  bool  // false when the customer had no provisional lead
	LeadID   int64 // the settled lead
	KeySaved bool  // the customer key was saved on the customer now
}

// CustomerQuery finds a program's customer by its saved customer key or
// by its click id (the key wins when both are given).
type CustomerQuery struct {
	ProgramID   int64
	CustomerKey string
	ClickID     string
}

// MsgCustomerLookup refuses a customer query that names no customer.
const MsgCustomerLookup = "customer_key or click_id is required"

// CustomerView is a customer with whether a provisional lead of it waits
// to settle.
type CustomerView struct {
	Customer
	Provisional bool
}

// LeadService records leads, settles provisional ones, and finds customers.
type LeadService interface {
	// TrackLead records a validated lead: it resolves the customer from the
	// click id (Postgres, else a click still in the queue) or, in server
	// mode, from a saved customer key, and stores the lead provisional or
	// settled. A test-mode lead is stored flagged and moves no customer.
	// Errors: EInvalid (MsgLeadCustomerNotFound, MsgLeadOtherProgram,
	// MsgLeadStatus, MsgUnknownProgramID, MsgLeadTestProgram).
	TrackLead(ctx context.Context, req LeadRequest) (*LeadResult, error)
	// SettleProvisionalLead settles the customer's provisional lead, if it
	// has one (Settled false otherwise): the lead counts from now, the
	// customer moves to lead (never back) and the customer key (the given
	// one, else the lead's) is saved unless another customer of the
	// program already has it. Idempotent. The server-mode lead path
	// settles through the same code. Errors: EInvalid (unknown By),
	// ENotFound (no such customer in the program).
	SettleProvisionalLead(ctx context.Context, s Settlement) (*SettleResult, error)
	// FindCustomer returns a program's customer. Errors: EInvalid (no key
	// or click id), ENotFound.
	FindCustomer(ctx context.Context, q CustomerQuery) (*CustomerView, error)
}
