package ledger

import (
	"context"
	"strings"
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
	// (ProgramInput.ApplyUpdate), then the webhook secret. Nothing is
	// written when any field is refused. Errors: ENotFound, EInvalid.
	UpdateSettings(ctx context.Context, programID int64, in SettingsInput) (*Program, error)
}
