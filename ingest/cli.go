package ingest

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// The /api/v1/cli/* family: the browser login, and the program commands
// of the command-line tool. Bodies use the data envelope (the reference
// CLI reads body.data, else the body); every 500 ends its message with the
// request id, which error.details.request_id repeats.

// cliStyle is the error style of a CLI route whose unexpected failures
// answer "<what failed> (request_id: <id>)".
func cliStyle(internalMessage string) errorStyle {
	return errorStyle{cli: true, internalMessage: internalMessage}
}

// The 500 messages of the spec's CLI table.
var (
	cliStartStyle    = cliStyle("Failed to start auth session")
	cliCallbackStyle = cliStyle("Auth callback failed")
	cliPollStyle     = cliStyle("Failed to poll auth session")
	cliInitStyle     = cliStyle("Failed to create program")
	cliProgramsStyle = cliStyle("Failed to list programs")
	cliStatusStyle   = cliStyle("Failed to get status")
	cliTestStyle     = cliStyle("Failed to process test event")
	cliChainStyle    = cliStyle("Failed to run synthetic chain")
)

// cliLoginPath is where auth_url points.
const cliLoginPath = "/cli/login"

// cliPollSeconds is how often the CLI is told to poll.
const cliPollSeconds = 2

// cliAuthStart is POST /api/v1/cli/auth/start. The body is optional (the
// reference CLI sends none): our CLI sends code_challenge (S256 of a
// secret verifier it keeps), and only a poll with that verifier then gets
// the token. The answer adds user_code, which the terminal shows and the
// sign-in page asks the person to confirm.
func (s *Server) cliAuthStart(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	opts := ledger.CLILoginOptions{UserAgent: c.Get(fiber.HeaderUserAgent)}
	if f.Has("code_challenge") {
		ch := f.String("code_challenge")
		if !ch.OK() || !ledger.ValidCodeChallenge(ch.Value) {
			return invalid(ledger.MsgCLICodeChallenge)
		}
		opts.CodeChallenge = ch.Value
	}
	if f.Has("code_challenge_method") {
		m := f.String("code_challenge_method")
		if !m.OK() || m.Value != ledger.CodeChallengeMethodS256 || opts.CodeChallenge == "" {
			return invalid(ledger.MsgCLIChallengeMethod)
		}
	}
	st, err := s.svc.CLILogin.StartLogin(c.UserContext(), opts)
	if err != nil {
		return err
	}
	q := "?state=" + url.QueryEscape(st.State)
	return ok(c, fiber.StatusOK, fiber.Map{
		"state":                 st.State,
		"user_code":             ledger.FormatUserCode(st.UserCode),
		"auth_url":              s.cfg.PublicBaseURL + cliLoginPath + q,
		"poll_url":              s.cfg.PublicBaseURL + "/api/v1/cli/auth/poll" + q,
		"expires_at":            formatTime(st.ExpiresAt),
		"poll_interval_seconds": cliPollSeconds,
	})
}

// nonBlank reads a string field that must be present and not blank.
func nonBlank(f fields, name string) (string, bool) {
	v := f.String(name)
	return v.Value, v.OK() && strings.TrimSpace(v.Value) != ""
}

// cliAuthConfirm is POST /api/v1/cli/auth/confirm: the sign-in page posts
// the state and the user code the person confirmed matches their
// terminal's. The page offers sign-in only after it; the callback itself
// takes state and id_token alone, as the contract says.
func (s *Server) cliAuthConfirm(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	state, okState := nonBlank(f, "state")
	code, okCode := nonBlank(f, "user_code")
	if !okState || !okCode {
		return invalid(ledger.MsgCLIConfirmFields)
	}
	if err := s.svc.CLILogin.ConfirmLogin(c.UserContext(), state, code); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"status": "confirmed"})
}

// cliAuthCallback is POST /api/v1/cli/auth/callback: the login page posts
// the CLI's state and the provider's id_token, verified exactly as
// dashboard sign-in verifies it; the user is created on first sign-in.
func (s *Server) cliAuthCallback(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	state, okState := nonBlank(f, "state")
	tok, okTok := nonBlank(f, "id_token")
	if !okState || !okTok {
		return invalid(ledger.MsgCLICallbackFields)
	}
	if s.svc.Identity == nil {
		return ledger.NewError(eUnavailable, msgSignInNotConfigured)
	}
	ctx := c.UserContext()
	if err := s.svc.CLILogin.CheckLogin(ctx, state); err != nil {
		return err
	}
	id, err := s.svc.Identity.VerifyIDToken(ctx, tok)
	if err != nil {
		return err
	}
	u, err := s.svc.SignIn.LinkIdentity(ctx, *id)
	if err != nil {
		return err
	}
	if err := s.svc.CLILogin.CompleteLogin(ctx, state, u.ID); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"status": "signed_in", "email": u.Email})
}

// cliAuthPoll is GET /api/v1/cli/auth/poll?state=.
func (s *Server) cliAuthPoll(c *fiber.Ctx) error {
	state := strings.TrimSpace(c.Query("state"))
	if state == "" {
		return invalid(ledger.MsgCLIMissingState)
	}
	p, err := s.svc.CLILogin.PollLogin(c.UserContext(), state, c.Query("code_verifier"))
	if err != nil {
		return err
	}
	data := fiber.Map{"status": p.Status}
	if p.Status == ledger.PollComplete {
		data["token"] = p.Token
		data["expires_at"] = formatTime(p.TokenExpires)
		data["user_id"] = p.UserID
		data["email"] = p.Email
		data["advertiser_id"] = p.AdvertiserID
	}
	return ok(c, fiber.StatusOK, data)
}

// idField reads an id sent as a JSON integer or a string of digits;
// anything else present is of the wrong shape.
func idField(f fields, name string) ledger.Input[int64] {
	if n := f.Int(name); !n.Bad {
		return n
	}
	s := f.String(name)
	if s.OK() {
		if n, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64); err == nil {
			return ledger.Some(n)
		}
	}
	return ledger.BadInput[int64]()
}

// cliInit is POST /api/v1/cli/init: a program in the login's advertiser,
// created with its keys, whose values it does not return.
func (s *Server) cliInit(c *fiber.Ctx) error {
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	roles, err := s.svc.CLI.AdvertiserRoles(ctx, sessionOf(c).UserID)
	if err != nil {
		return err
	}
	ws, err := ledger.ResolveAdvertiser(roles, idField(f, "advertiser_id"))
	if err != nil {
		return err
	}
	p, err := s.svc.Programs.CreateProgram(ctx, ws, programInput(f))
	if err != nil {
		return err
	}
	// Every program field (programJSON: the key masked only), under the
	// names the reference CLI reads too.
	body := programJSON(p)
	body["program_id"] = p.ID
	body["advertiser_id"] = p.WorkspaceID
	body["message"] = "Program created. Its API key is not shown at creation: the workspace owner generates it with " +
		"POST /api/v1/programs/" + strconv.FormatInt(p.ID, 10) + "/api-key."
	return ok(c, fiber.StatusCreated, body)
}

// cliPrograms is GET /api/v1/cli/programs: data is the array.
func (s *Server) cliPrograms(c *fiber.Ctx) error {
	list, err := s.svc.CLI.Programs(c.UserContext(), sessionOf(c).UserID)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, len(list))
	for i, p := range list {
		out[i] = fiber.Map{
			"id":         p.ID,
			"name":       p.Name,
			"domain":     p.Domain,
			"status":     p.Status,
			"commission": p.Commission,
			"partners":   p.Partners,
			"created_at": formatTime(p.CreatedAt),
		}
	}
	return ok(c, fiber.StatusOK, out)
}

// checkKeyProgram refuses a program_id that is not the key's program
// (Authentication rule 1). raw is the id as sent; "" is absent.
func checkKeyProgram(key *ledger.ProgramKey, raw string) error {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err != nil || n != key.ProgramID {
		return ledger.NewError(ledger.EForbidden, ledger.MsgCLIProgramMismatch)
	}
	return nil
}

// cliStatus is GET /api/v1/cli/status?program_id=.
func (s *Server) cliStatus(c *fiber.Ctx) error {
	key := programKeyOf(c)
	if err := checkKeyProgram(key, c.Query("program_id")); err != nil {
		return err
	}
	st, err := s.svc.CLI.Status(c.UserContext(), key.ProgramID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{
		"program_id":             st.ProgramID,
		"name":                   st.Name,
		"domain":                 st.Domain,
		"dns_verified":           false,
		"stripe_connected":       st.ProcessorConnected,
		"stripe_charges_enabled": st.ProcessorConnected,
		"recent_events": fiber.Map{
			"clicks_24h": st.Recent.Clicks,
			"leads_24h":  st.Recent.Leads,
			"sales_24h":  st.Recent.Sales,
		},
		"active_partners":     st.ActivePartners,
		"pending_commissions": st.PendingCommissions,
	})
}

// rawText renders a field as the caller sent it, for a message: a string
// as it is, anything else as its JSON ("null" when absent).
func rawText(f fields, name string) string {
	if v := f.String(name); v.OK() {
		return v.Value
	}
	if raw, ok := f.raw(name); ok {
		return string(raw)
	}
	return "null"
}

// cliTestEvent is POST /api/v1/cli/test-event: one flagged test event
// (event_type click, lead or sale), or the synthetic chain (type chain).
func (s *Server) cliTestEvent(c *fiber.Ctx) error {
	key := programKeyOf(c)
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	if f.Has("program_id") {
		if err := checkKeyProgram(key, rawText(f, "program_id")); err != nil {
			return err
		}
	}
	ctx := c.UserContext()
	if t := f.String("type"); t.OK() && t.Value == ledger.TestEventChain {
		c.Locals(styleKey{}, cliChainStyle)
		run, err := s.svc.Synthetic.RunChain(ctx, key.ProgramID)
		var le *ledger.Error
		if errors.As(err, &le) && le.Code == ledger.ERateLimited {
			if secs, isInt := le.Details["retry_after_seconds"].(int); isInt {
				c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
			}
		}
		if err != nil {
			return err
		}
		return ok(c, fiber.StatusOK, chainJSON(run))
	}
	name := "event_type"
	if !f.Has(name) && f.Has("type") {
		name = "type" // the type of a single event, as some callers send it
	}
	eventType := f.String(name)
	if !eventType.OK() || !ledger.ValidTestEventType(eventType.Value) {
		return invalid(ledger.MsgInvalidEventType(rawText(f, name)))
	}
	res, err := s.svc.Synthetic.TestEvent(ctx, key.ProgramID, eventType.Value)
	if err != nil {
		return err
	}
	message := map[string]string{
		ledger.TestEventClick: ledger.MsgTestClickRecorded,
		ledger.TestEventLead:  ledger.MsgTestLeadRecorded,
		ledger.TestEventSale:  ledger.MsgTestSaleEvent,
	}[res.EventType]
	return ok(c, fiber.StatusOK, fiber.Map{
		"event_type": res.EventType,
		"event_id":   res.EventID,
		"received":   true,
		"attributed": false,
		"test":       true,
		"message":    message,
	})
}

// verdictJSON renders a chain's verdicts.
func verdictJSON(v ledger.ChainVerdicts) fiber.Map {
	return fiber.Map{"click": string(v.Click), "lead": string(v.Lead), "sale": string(v.Sale)}
}

// chainJSON renders a chain run in the reference clients' shape.
func chainJSON(run *ledger.ChainRun) fiber.Map {
	return fiber.Map{
		"type":         ledger.TestEventChain,
		"chain_id":     run.ID,
		"short_code":   run.ShortCode,
		"customer_key": run.CustomerKey,
		"click_id":     run.ClickID,
		"verdict":      verdictJSON(run.Verdict),
		"attributed":   run.Verdict.Attributed(),
		"created_at":   formatTime(run.CreatedAt),
	}
}

// cliStripeConnect is the retired POST /api/v1/cli/stripe-connect.
func (s *Server) cliStripeConnect(c *fiber.Ctx) error {
	return ledger.NewError(ledger.EGone, ledger.MsgCLIStripeRetired)
}
