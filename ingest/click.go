package ingest

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/enrich"
	"github.com/partnertrack/partnertrack/ledger"
)

// The click, visit and tracker-config endpoints: public, IP-limited,
// answering cross-origin calls from landing pages. A click is resolved
// from the in-memory link cache, enriched, and answered 200 only once the
// traffic pipeline has made it durable (in Redis, or in Postgres while
// Redis is away).

// Route styles of the browser endpoints.
var (
	clickStyle  = errorStyle{internalMessage: "Click tracking failed"}
	visitStyle  = errorStyle{internalMessage: "Visit tracking failed"}
	configStyle = errorStyle{internalMessage: "Tracker configuration failed"}
)

// trafficInput is what the click and visit bodies share: additional_data
// (test_mode, program_id).
type trafficInput struct {
	testMode      bool
	dataProgramID ledger.Input[int64]
}

// parseTraffic reads a click or visit body and its additional_data.
func parseTraffic(c *fiber.Ctx) (leanFields, trafficInput, error) {
	f, err := parseLean(c)
	if err != nil {
		return f, trafficInput{}, err
	}
	extra, err := readAdditionalData(f)
	return f, extra, err
}

func readAdditionalData(f leanFields) (trafficInput, error) {
	var in trafficInput
	ad := f.Object("additional_data")
	if ad.Bad {
		return in, invalid(ledger.MsgAdditionalDataObject)
	}
	if !ad.Present {
		return in, nil
	}
	tm := ad.Value.Bool("test_mode")
	if tm.Bad {
		return in, invalid(ledger.MsgTestModeBoolean)
	}
	in.testMode = tm.Value
	in.dataProgramID = programIDField(ad.Value, "program_id")
	return in, nil
}

// programIDField reads a program id sent as a JSON integer or as a string
// of digits (the tracker reads it from a data- attribute). Anything else
// is of the wrong shape.
func programIDField(f leanFields, name string) ledger.Input[int64] {
	if n := f.Int(name); !n.Bad {
		return n
	}
	s := f.String(name)
	if s.Bad {
		return ledger.BadInput[int64]()
	}
	id, err := strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
	if err != nil || id <= 0 {
		return ledger.BadInput[int64]()
	}
	return ledger.Some(id)
}

// knownProgram checks that a program id the caller sent names a program
// (from the cache): else 400 Unknown program_id.
func (s *Server) knownProgram(ctx context.Context, id ledger.Input[int64]) (*ledger.TrackerSettings, error) {
	if id.Bad {
		return nil, invalid(ledger.MsgUnknownProgram)
	}
	t, err := s.svc.Tracking.TrackerSettings(ctx, id.Value)
	if ledger.ErrorCode(err) == ledger.ENotFound {
		return nil, invalid(ledger.MsgUnknownProgram)
	}
	return t, err
}

// optText reads an optional text field, cut to max bytes. A value that is
// not a string is refused with the field's own message.
func optText(f leanFields, name string, max int) (string, error) {
	in := f.String(name)
	if in.Bad {
		return "", invalid(ledger.MsgMustBeString(name))
	}
	return ledger.ClipText(strings.TrimSpace(in.Value), max), nil
}

// trackClick is POST /api/v1/track/click.
func (s *Server) trackClick(c *fiber.Ctx) error {
	ctx := c.UserContext()
	f, extra, err := parseTraffic(c)
	if err != nil {
		return err
	}
	key := programKeyOf(c)
	test := extra.testMode || (key != nil && key.IsTest())
	// A test click made with a key may only speak for the key's program.
	if test && key != nil && extra.dataProgramID.Present &&
		(extra.dataProgramID.Bad || extra.dataProgramID.Value != key.ProgramID) {
		return ledger.NewError(ledger.EForbidden, ledger.MsgProgramKeyMismatch)
	}

	// The spec's 400s, in its order.
	aff := f.String("affiliate_url")
	if !aff.Present {
		return invalid(ledger.MsgAffiliateURLRequired)
	}
	if aff.Bad {
		return invalid(ledger.MsgAffiliateURLInvalid)
	}
	code, err := ledger.ReferralCode(aff.Value)
	if err != nil {
		return err
	}
	programID := programIDField(f, "program_id")
	if programID.Present {
		if _, err := s.knownProgram(ctx, programID); err != nil {
			return err
		}
	}
	var link *ledger.ReferralLink
	if ledger.ValidLinkCode(code) { // no link can have any other code
		link, err = s.svc.Tracking.ReferralLink(ctx, code)
		if err != nil && ledger.ErrorCode(err) != ledger.ENotFound {
			return err
		}
	}
	if link == nil {
		return invalid(ledger.MsgLinkNotFound)
	}
	if !link.Usable() {
		return invalid(ledger.MsgLinkMisconfigured)
	}
	if programID.Present && link.Program.ProgramID != programID.Value {
		return invalid(ledger.MsgLinkNotFound) // no link of that program has the code
	}
	if !link.Active {
		return &ledger.Error{Code: ledger.ELinkDisabled, Message: ledger.MsgLinkDisabled,
			Details: map[string]any{"hint": ledger.MsgLinkDisabledHint}}
	}

	click, err := s.newClick(c, f, link, test)
	if err != nil {
		return err
	}
	if click.PageURL == "" {
		click.PageURL = ledger.ClipText(strings.TrimSpace(aff.Value), ledger.ClipURL)
	}
	if err := s.svc.Traffic.RecordClick(ctx, click); err != nil {
		return err
	}
	if test {
		return c.JSON(testClickBody(click, link))
	}
	// Rendered on the stack and copied into the response's own buffer,
	// where a byte slice handed to Send would be allocated every click.
	var buf [maxClickBody]byte
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Response().ResetBody()
	c.Response().AppendBody(appendClickBody(buf[:0], click.ID, link.Code, link.Program.CookieDuration))
	return nil
}

// newClick builds the click of a request: the caller's optional fields
// (compat-notes: page_url, referrer_url, session_id, user_agent, …) and
// what the edge derives (client IP, device, geo). Every string is a copy:
// the click outlives the request's buffers in its batch.
func (s *Server) newClick(c *fiber.Ctx, f leanFields, link *ledger.ReferralLink, test bool) (*ledger.Click, error) {
	var texts [4]string
	for i, t := range []struct {
		name string
		max  int
	}{{"page_url", ledger.ClipURL}, {"referrer_url", ledger.ClipURL}, {"session_id", ledger.ClipID}, {"user_agent", ledger.ClipShort}} {
		v, err := optText(f, t.name, t.max)
		if err != nil {
			return nil, err
		}
		texts[i] = v
	}
	// Accepted and not stored: page_title, screen_resolution,
	// viewport_size, language, timezone, existing_click_id. They must
	// still be strings when sent.
	for _, name := range []string{"page_title", "screen_resolution", "viewport_size", "language", "timezone", "existing_click_id"} {
		if f.String(name).Bad {
			return nil, invalid(ledger.MsgMustBeString(name))
		}
	}
	agent := texts[3]
	if agent == "" {
		agent = ledger.ClipText(strings.Clone(c.Get(fiber.HeaderUserAgent)), ledger.ClipShort)
	}
	id := ledger.NewClickID(s.now())
	at, _ := ledger.ClickTime(id)
	linkID := link.LinkID
	addr := s.clientAddr(c)
	dev := s.devices.Parse(agent)
	loc := s.location(c, addr)
	click := &ledger.Click{
		ID: id, OccurredAt: at, ProgramID: link.Program.ProgramID, PartnerID: link.PartnerID, LinkID: &linkID,
		IsTest: test || link.IsTest, PageURL: texts[0], ReferrerURL: texts[1], SessionID: texts[2],
		GeoCountry: loc.Country, GeoRegion: loc.Region, GeoCity: loc.City,
		DeviceType: dev.Type, DeviceOS: dev.OS, BrowserName: dev.Browser,
		UserAgent: agent,
	}
	if addr.IsValid() {
		click.IP = addr.String()
	}
	return click, nil
}

// clientAddr is the client IP (see clientIP) as an address.
func (s *Server) clientAddr(c *fiber.Ctx) netip.Addr {
	addr, _ := netip.ParseAddr(s.clientIP(c))
	return addr
}

// cdnGeo lists the geo headers of the CDNs we read, per CDN: country,
// region, city. Vercel percent-encodes its city and region.
var cdnGeo = []struct {
	country, region, city string
	escaped               bool
}{
	{"CF-IPCountry", "CF-Region", "CF-IPCity", false},
	{"CloudFront-Viewer-Country", "CloudFront-Viewer-Country-Region-Name", "CloudFront-Viewer-City", false},
	{"X-Vercel-IP-Country", "X-Vercel-IP-Country-Region", "X-Vercel-IP-City", true},
}

// location says where the client is: from a CDN's geo headers when the
// request came through a trusted proxy (anyone else could forge them),
// else from the MaxMind database when one is configured.
func (s *Server) location(c *fiber.Ctx, addr netip.Addr) enrich.Location {
	if peer, ok := netip.AddrFromSlice(c.Context().RemoteIP()); ok && s.trusted(peer.Unmap()) {
		for _, h := range cdnGeo {
			country := strings.ToUpper(strings.TrimSpace(c.Get(h.country)))
			if len(country) != 2 || country == "XX" || country == "T1" || !isLetters(country) {
				continue
			}
			return enrich.Location{
				Country: strings.Clone(country),
				Region:  headerText(c.Get(h.region), h.escaped),
				City:    headerText(c.Get(h.city), h.escaped),
			}
		}
	}
	return s.geo.Lookup(addr)
}

func headerText(v string, escaped bool) string {
	v = strings.TrimSpace(v)
	if escaped {
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
	}
	return ledger.ClipText(strings.Clone(v), ledger.ClipID)
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// maxClickBody holds a click response with the longest link code (64
// bytes, twice), so that the hot path renders it on the stack.
const maxClickBody = 224 + 2*64

// appendClickBody renders the click response by hand (it is the hot
// path): the contract's fields at the top level, as the reference browser
// SDK reads them, and again in data. The id is lower-case base32 and the
// code is letters, digits, '-' and '_', so neither needs escaping.
func appendClickBody(b []byte, id, code string, days int) []byte {
	b = append(b, '{')
	b = appendClickFields(b, id, code, days)
	b = append(b, `,"data":{`...)
	b = appendClickFields(b, id, code, days)
	return append(b, "}}"...)
}

func appendClickFields(b []byte, id, code string, days int) []byte {
	b = append(b, `"success":true,"click_id":"`...)
	b = append(b, id...)
	b = append(b, `","partner_code":"`...)
	b = append(b, code...)
	b = append(b, `","cookie_window_days":`...)
	return strconv.AppendInt(b, int64(days), 10)
}

// testClickBody is the test-mode response: the reference's test shape
// (message, data.eventId, data.programId, data.test_mode) plus the
// click's fields, so that a test click also sets a cookie.
func testClickBody(click *ledger.Click, link *ledger.ReferralLink) fiber.Map {
	return fiber.Map{
		"success":            true,
		"message":            "Test click recorded",
		"test_mode":          true,
		"click_id":           click.ID,
		"partner_code":       link.Code,
		"cookie_window_days": link.Program.CookieDuration,
		"data": fiber.Map{
			"success":            true,
			"eventId":            click.ID,
			"programId":          click.ProgramID,
			"test_mode":          true,
			"click_id":           click.ID,
			"partner_code":       link.Code,
			"cookie_window_days": link.Program.CookieDuration,
		},
	}
}

// trackVisit is POST /api/v1/track/visit: one page view of a page that
// carries the tracker. Body: program_id (required, integer or string of
// digits), click_id, session_id, page_url, referrer_url (optional
// strings), additional_data.test_mode.
func (s *Server) trackVisit(c *fiber.Ctx) error {
	ctx := c.UserContext()
	f, extra, err := parseTraffic(c)
	if err != nil {
		return err
	}
	programID := programIDField(f, "program_id")
	if !programID.Present {
		return invalid(ledger.MsgProgramIDRequired)
	}
	if _, err := s.knownProgram(ctx, programID); err != nil {
		return err
	}
	v := &ledger.Visit{ProgramID: programID.Value, IsTest: extra.testMode}
	for _, t := range []struct {
		name string
		max  int
		dst  *string
	}{{"click_id", ledger.ClipID, &v.ClickID}, {"session_id", ledger.ClipID, &v.SessionID},
		{"page_url", ledger.ClipURL, &v.PageURL}, {"referrer_url", ledger.ClipURL, &v.ReferrerURL}} {
		if *t.dst, err = optText(f, t.name, t.max); err != nil {
			return err
		}
	}
	if _, ok := ledger.ClickTime(v.ClickID); !ok {
		v.ClickID = "" // a brand's own value, not one of our clicks
	}
	v.ID = ledger.NewClickID(s.now())
	v.OccurredAt, _ = ledger.ClickTime(v.ID)
	if err := s.svc.Traffic.RecordVisit(ctx, v); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "visit_id": v.ID, "data": fiber.Map{"visit_id": v.ID}})
}

// configMaxAge is how long browsers and CDNs may keep a tracker config.
const configMaxAge = 300

// trackerConfig is GET /api/v1/track/config?program_id=: what the tracker
// needs to know about a program.
func (s *Server) trackerConfig(c *fiber.Ctx) error {
	raw := strings.TrimSpace(c.Query("program_id"))
	if raw == "" {
		return invalid(ledger.MsgProgramIDRequired)
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	programID := ledger.Some(id)
	if err != nil || id <= 0 {
		programID = ledger.BadInput[int64]()
	}
	t, err := s.knownProgram(c.UserContext(), programID)
	if err != nil {
		return err
	}
	prefix := s.cfg.BrandPrefix
	c.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(configMaxAge))
	return ok(c, fiber.StatusOK, fiber.Map{
		"program_id":         t.ProgramID,
		"cookie_duration":    t.CookieDuration,
		"cookie_window_days": t.CookieDuration,
		"lead_auth":          t.LeadAuth,
		"parameters":         []string{ledger.ReferralParam, ledger.ViaParam},
		"brand_prefix":       prefix,
		"cookie_name":        prefix + "_click_id",
		"endpoints": fiber.Map{
			"click": "/api/v1/track/click",
			"visit": "/api/v1/track/visit",
			"lead":  "/api/v1/track/lead",
		},
	})
}
