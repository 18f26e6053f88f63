package ledger

import (
	"context"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Messages of POST /api/v1/track/click. The first seven are the spec's,
// to the letter, the 400s in the spec's order.
const (
	MsgAffiliateURLRequired = "affiliate_url is required"
	MsgAffiliateURLInvalid  = "Invalid affiliate_url"
	MsgNoAffParameter       = "No aff parameter found in affiliate_url"
	MsgUnknownProgram       = "Unknown program_id"
	MsgLinkNotFound         = "Referral link not found"
	MsgLinkMisconfigured    = "Invalid referral link configuration"
	MsgProgramKeyMismatch   = "program_id does not match the API key"

	MsgLinkDisabled         = "Referral link is disabled"
	MsgLinkDisabledHint     = "The program turned this partner's referral link off; no click was recorded. Ask the partner for an active link."
	MsgProgramIDRequired    = "program_id is required"
	MsgAdditionalDataObject = "additional_data must be an object"
	MsgTestModeBoolean      = "additional_data.test_mode must be a boolean"
)

// The landing-URL parameters that carry a referral code, in the order
// they are read.
const (
	ReferralParam = "aff"
	ViaParam      = "via"
)

// maxAffiliateURL bounds the landing URL a click may name.
const maxAffiliateURL = 8192

// MsgMustBeString is the message of an optional text field of the wrong
// JSON type.
func MsgMustBeString(field string) string { return field + " must be a string" }

// ReferralCode returns the referral code that a landing URL carries in its
// aff parameter, else in its via parameter (an empty value counts as
// absent). Errors: EInvalid with the spec's messages for a URL that is
// empty, not absolute http(s), or carries neither parameter.
func ReferralCode(affiliateURL string) (string, error) {
	s := strings.TrimSpace(affiliateURL)
	if s == "" {
		return "", NewError(EInvalid, MsgAffiliateURLRequired)
	}
	if len(s) > maxAffiliateURL {
		return "", NewError(EInvalid, MsgAffiliateURLInvalid)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", NewError(EInvalid, MsgAffiliateURLInvalid)
	}
	for _, name := range []string{ReferralParam, ViaParam} {
		if code := strings.TrimSpace(queryValue(u.RawQuery, name)); code != "" {
			return code, nil
		}
	}
	return "", NewError(EInvalid, MsgNoAffParameter)
}

// queryValue returns the first value of name in a raw query, as
// url.ParseQuery(raw).Get(name) would, except that a pair that does not
// decode is skipped rather than failing the query (a stray '%' in one
// pair must not hide a well-formed aff pair). It reads the one parameter
// instead of building the whole query's map: it runs on every click.
func queryValue(raw, name string) string {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k != name {
			if !strings.ContainsAny(k, "%+") {
				continue
			}
			if uk, err := url.QueryUnescape(k); err != nil || uk != name {
				continue
			}
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			return uv
		}
	}
	return ""
}

// ClipText makes a caller's text storable: valid UTF-8 (invalid bytes
// become U+FFFD), without NUL bytes (Postgres text cannot hold them), and
// at most max bytes, cut on a character boundary. Clicks keep what they
// can of an overlong URL rather than losing the click, and a header with
// stray bytes must not make a batch that Postgres refuses.
func ClipText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Limits of the stored click and visit texts, in bytes.
const (
	ClipURL   = 2048 // page and referrer URLs
	ClipShort = 512  // user agent
	ClipID    = 128  // session ids
)

// TrackerSettings are a program's facts that the tracker and the click
// path need.
type TrackerSettings struct {
	ProgramID      int64
	CookieDuration int    // days; the click's cookie_window_days
	LeadAuth       string // LeadServerRequired or LeadBrowserAllowed
}

// ReferralLink is what a click needs to know about a referral code: the
// link, its partner and its program's tracker settings.
type ReferralLink struct {
	LinkID    int64
	Code      string
	Active    bool
	IsTest    bool   // a test fixture: its clicks are test clicks
	PartnerID *int64 // nil when the partner is gone
	// Program is nil when the link belongs to no program.
	Program *TrackerSettings
}

// Usable reports whether a click can be attributed through the link: it
// names both a partner and a program.
func (l *ReferralLink) Usable() bool { return l.PartnerID != nil && l.Program != nil }

// Visit is one page view on a brand's site that carries the tracker.
type Visit struct {
	ID          string // a ULID like a click id; OccurredAt is its time
	OccurredAt  time.Time
	ProgramID   int64
	ClickID     string // the visitor's click, when the tracker knows one
	SessionID   string
	PageURL     string
	ReferrerURL string
	IsTest      bool
}

// TrackingDirectory reads what the tracking endpoints need about links
// and programs.
type TrackingDirectory interface {
	// ReferralLink returns the link with code (matched exactly).
	// Errors: ENotFound.
	ReferralLink(ctx context.Context, code string) (*ReferralLink, error)
	// TrackerSettings returns a program's tracker settings.
	// Errors: ENotFound.
	TrackerSettings(ctx context.Context, programID int64) (*TrackerSettings, error)
}

// TrafficStore writes clicks and visits in batches. Writing is
// idempotent: a click or visit already stored (same id) is skipped, so a
// retried batch never duplicates. Rows whose program is gone are dropped.
type TrafficStore interface {
	TrackingDirectory
	// WriteClicks stores a batch of clicks and returns how many were new.
	WriteClicks(ctx context.Context, clicks []Click) (int, error)
	// WriteVisits stores a batch of visits and returns how many were new.
	WriteVisits(ctx context.Context, visits []Visit) (int, error)
}

// TrafficRecorder takes clicks and visits at the edge. Each call returns
// only once the click or visit is durable (in the queue, or written to
// Postgres when the queue is unreachable); an error means it was not
// stored and must not be acknowledged.
type TrafficRecorder interface {
	RecordClick(ctx context.Context, c *Click) error
	RecordVisit(ctx context.Context, v *Visit) error
}

// TrackingInvalidator drops cached link and program facts on every edge
// instance. Callers invalidate after the change has committed; an error
// means other instances may serve the old facts until their cache entries
// expire (seconds).
type TrackingInvalidator interface {
	InvalidateLink(ctx context.Context, code string) error
	InvalidateProgram(ctx context.Context, programID int64) error
}
