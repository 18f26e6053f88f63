package ledger

import (
	"context"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// MsgStripeWebhookSecret is the message of a malformed processor webhook
// signing secret.
const MsgStripeWebhookSecret = "stripe_webhook_secret must be a string starting with whsec_ (or an empty string to remove it)"

// StripeSecretPrefix starts every Stripe webhook signing secret.
const StripeSecretPrefix = "whsec_"

// SettingsInput is a program settings update from the dashboard: the
// program fields, validated as CLI init validates them, and the signing
// secret of a processor webhook the brand added itself (write-only: set it,
// or send "" to remove it; reads only say whether one is set).
type SettingsInput struct {
	Program             ProgramInput
	StripeWebhookSecret Input[string]
	// Slug and PartnerApproval are the public page's settings (issue 24):
	// checked after the program fields, before the secret.
	Slug            Input[string]
	PartnerApproval Input[string]
	// Timezone is the IANA zone of the program's analytics days (issue
	// 25): checked after the public page's settings.
	Timezone Input[string]
	// PartnerLinks and MinimumPayout are the partner portal's settings
	// (issue 26): checked after the timezone, before the secret;
	// MinimumPayout against the program's currency after the update
	// (PortalSettings).
	PartnerLinks  Input[bool]
	MinimumPayout Input[decimal.Decimal]
}

// PortalSettings returns the partner_links and minimum_payout the update
// sets (nil when absent), minimum_payout checked against the program's
// currency c. Errors: EInvalid (MsgPartnerLinks, MsgMinimumPayout).
func (in SettingsInput) PortalSettings(c Currency) (partnerLinks *bool, minimumPayout *decimal.Decimal, err error) {
	if in.PartnerLinks.Present {
		if in.PartnerLinks.Bad {
			return nil, nil, NewError(EInvalid, MsgPartnerLinks)
		}
		v := in.PartnerLinks.Value
		partnerLinks = &v
	}
	if in.MinimumPayout.Present {
		v, err := ParseMinimumPayout(in.MinimumPayout, c)
		if err != nil {
			return nil, nil, err
		}
		minimumPayout = &v
	}
	return partnerLinks, minimumPayout, nil
}

// MsgTimezone is the message of a timezone that is not an IANA name.
const MsgTimezone = "timezone must be an IANA time zone name such as Europe/Paris"

// TimezoneSetting returns the timezone the update sets (nil when absent),
// checked against Go's zone database; the store also checks that Postgres
// knows it. "Local" and "" are refused: they name no zone. Errors:
// EInvalid (MsgTimezone).
func (in SettingsInput) TimezoneSetting() (*string, error) {
	tz := in.Timezone
	if !tz.Present {
		return nil, nil
	}
	if tz.Bad || tz.Value == "" || tz.Value == "Local" || len(tz.Value) > 64 {
		return nil, NewError(EInvalid, MsgTimezone)
	}
	if _, err := time.LoadLocation(tz.Value); err != nil {
		return nil, NewError(EInvalid, MsgTimezone)
	}
	v := tz.Value
	return &v, nil
}

// PublicSettings returns the slug and partner_approval the update sets
// (nil when absent). Errors: EInvalid (MsgSlug, MsgSlugReserved,
// MsgPartnerApproval).
func (in SettingsInput) PublicSettings(programID int64) (slug, approval *string, err error) {
	if in.Slug.Present {
		if in.Slug.Bad {
			return nil, nil, NewError(EInvalid, MsgSlug)
		}
		if err := ValidateSlug(in.Slug.Value, programID); err != nil {
			return nil, nil, err
		}
		v := in.Slug.Value
		slug = &v
	}
	if in.PartnerApproval.Present {
		v, err := ParseApproval(in.PartnerApproval.Value)
		if in.PartnerApproval.Bad || err != nil {
			return nil, nil, NewError(EInvalid, MsgPartnerApproval)
		}
		approval = &v
	}
	return slug, approval, nil
}

// StripeSecret returns whether the update sets the secret and its new
// value ("" removes it). Errors: EInvalid.
func (in SettingsInput) StripeSecret() (set bool, value string, err error) {
	s := in.StripeWebhookSecret
	if !s.Present {
		return false, "", nil
	}
	if s.Bad {
		return false, "", NewError(EInvalid, MsgStripeWebhookSecret)
	}
	if s.Value == "" {
		return true, "", nil
	}
	if !strings.HasPrefix(s.Value, StripeSecretPrefix) || len(s.Value) <= len(StripeSecretPrefix) || len(s.Value) > 255 {
		return false, "", NewError(EInvalid, MsgStripeWebhookSecret)
	}
	for i := 0; i < len(s.Value); i++ {
		if c := s.Value[i]; c <= ' ' || c > '~' {
			return false, "", NewError(EInvalid, MsgStripeWebhookSecret)
		}
	}
	return true, s.Value, nil
}

// SettingsService changes a program's settings.
type SettingsService interface {
	// UpdateSettings applies an update in one transaction: the program
	// fields in the spec's order with CLI init's messages
	// (ProgramInput.ApplyUpdate), then slug and partner_approval, then
	// timezone (MsgTimezone), then partner_links and minimum_payout
	// (PortalSettings), then the webhook secret. A new timezone
	// rebuilds the program's analytics rollups in the same transaction. Nothing is written when any field is refused.
	// Errors: ENotFound, EInvalid, EConflict (MsgSlugTaken).
	UpdateSettings(ctx context.Context, programID int64, in SettingsInput) (*Program, error)
}
