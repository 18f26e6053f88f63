package ingest

import (
	"bytes"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stripe/stripe-go/v86"
	"github.com/stripe/stripe-go/v86/webhook"

	"github.com/partnertrack/partnertrack/ledger"
)

// Messages of the processor webhooks (the spec names none).
const (
	msgStripeNotSigned     = "Missing Stripe-Signature header"
	msgStripeBadSignature  = "Invalid Stripe-Signature: no signature matches the payload and the signing secret"
	msgStripeTooOld        = "Stripe-Signature timestamp is outside the 5-minute tolerance"
	msgStripeNotEvent      = "Payload is not a Stripe event"
	msgStripeNoSecret      = "No Stripe webhook signing secret is set for this program"
	stripeSignatureTimeout = 5 * time.Minute
)

var processorStyle = errorStyle{internalMessage: "Processor event could not be stored"}

// stripeWebhook is POST /api/v1/webhooks/stripe: the Stripe Connect events
// of every connected account, verified with STRIPE_WEBHOOK_SECRET. Without
// a secret the endpoint does not exist (404).
func (s *Server) stripeWebhook(c *fiber.Ctx) error {
	if s.cfg.StripeWebhookSecret == "" {
		return fiber.ErrNotFound
	}
	return s.receiveStripe(c, s.cfg.StripeWebhookSecret, 0)
}

// brandStripeWebhook is POST /webhooks/stripe/:programId: a webhook the
// brand added on its own Stripe account, verified with the program's own
// signing secret; its events belong to that program.
func (s *Server) brandStripeWebhook(c *fiber.Ctx) error {
	programID, err := pathID(c, "programId", "program")
	if err != nil {
		return err
	}
	secret, err := s.svc.Processor.WebhookSecret(c.UserContext(), programID)
	if err != nil {
		return err
	}
	if secret == "" {
		return ledger.NewError(ledger.EInvalid, msgStripeNoSecret)
	}
	return s.receiveStripe(c, secret, programID)
}

// receiveStripe verifies an event's signature (tolerance 5 minutes; an
// event in another API version than the library's is accepted and logged),
// stores it and queues it. It answers 200 once the event is stored: a
// failed enqueue leaves it to the sweep. A bad or missing signature is 400
// with nothing stored.
func (s *Server) receiveStripe(c *fiber.Ctx, secret string, programID int64) error {
	// The body exactly as Stripe signed it; fiber reuses its buffer.
	payload := bytes.Clone(c.Body())
	ev, err := webhook.ConstructEventWithOptions(payload, c.Get("Stripe-Signature"), secret,
		webhook.ConstructEventOptions{Tolerance: stripeSignatureTimeout, IgnoreAPIVersionMismatch: true})
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return ledger.NewError(ledger.EInvalid, msgStripeNotSigned)
	case errors.Is(err, webhook.ErrTooOld):
		return ledger.NewError(ledger.EInvalid, msgStripeTooOld)
	case errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return ledger.NewError(ledger.EInvalid, msgStripeBadSignature)
	case err != nil:
		// Signed, but not an event (the signature is checked first).
		return ledger.NewError(ledger.EInvalid, msgStripeNotEvent)
	case ev.ID == "" || ev.Type == "":
		return ledger.NewError(ledger.EInvalid, msgStripeNotEvent)
	}
	// The event is stored as jsonb, which holds no NUL character and no
	// lone surrogate: text Stripe relays from the brand's customers could
	// carry either, and a verified event must be stored whatever it holds.
	stored, storable := ledger.StorableJSON(payload, true)
	if !storable {
		return ledger.NewError(ledger.EInvalid, msgStripeNotEvent)
	}
	if ev.APIVersion != stripe.APIVersion {
		s.logger.Info("processor event in another API version than the library's; accepted",
			"event_id", ev.ID, "api_version", ev.APIVersion, "library_api_version", stripe.APIVersion)
	}
	res, err := s.svc.Processor.Receive(c.UserContext(), ledger.ReceivedEvent{
		EventID:   ev.ID,
		Provider:  ledger.ProviderStripe,
		AccountID: ev.Account,
		ProgramID: programID,
		Type:      string(ev.Type),
		Livemode:  ev.Livemode,
		Payload:   stored,
	})
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"received": true, "event_id": ev.ID, "duplicate": res.Duplicate})
}
