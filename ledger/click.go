package ledger

import (
	"context"
	"crypto/rand"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Click is one click on a referral link, as the edge enriched it.
type Click struct {
	ID          string    // a ULID: 48-bit millisecond time + 80 random bits
	OccurredAt  time.Time // the time carried by ID
	ProgramID   int64
	PartnerID   *int64
	LinkID      *int64
	IsTest      bool
	SessionID   string
	PageURL     string
	ReferrerURL string
	GeoCountry  string
	GeoRegion   string
	GeoCity     string
	DeviceType  string
	DeviceOS    string
	BrowserName string
	IP          string
	UserAgent   string
}

// NewClickID returns an unguessable, time-ordered click id: a ULID in
// lower case (26 characters of Crockford base32, within Stripe's
// client_reference_id alphabet) whose 80 random bits come from crypto/rand.
func NewClickID(now time.Time) string {
	id, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		panic("ledger: crypto/rand failed: " + err.Error())
	}
	return strings.ToLower(id.String())
}

// ClickTime returns the time carried by a click id, and false when s is not
// a click id (brands may put other values where a click id is expected;
// those simply resolve to nothing).
func ClickTime(s string) (time.Time, bool) {
	if len(s) != ulid.EncodedSize {
		return time.Time{}, false
	}
	id, err := ulid.ParseStrict(s)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(id.Time()).UTC(), true
}

// PendingClicks finds a click the edge acknowledged whose batch may not
// have reached Postgres yet (the short-lived pending-click record the edge
// writes with each batch).
type PendingClicks interface {
	// PendingClick returns the click. Errors: ENotFound when the id is
	// unknown or its record expired.
	PendingClick(ctx context.Context, clickID string) (*Click, error)
}
