package ledger

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Payment-processor events. The edge verifies an event's signature, stores
// it raw (unique by event id) and queues it; a worker then reads it, works
// out what it means (a PaymentEvent), attributes it to a customer in the
// spec's order and records the sale, the refund or the processor customer
// id through the same ledger code the sale and refund endpoints use.

// Statuses of a stored processor event (processor_events.status).
const (
	EventReceived  = "received"  // stored; not processed yet (or a retry is due)
	EventProcessed = "processed" // it changed something (a sale, a refund, a saved processor customer id, a payment link)
	EventSkipped   = "skipped"   // it asked for nothing, or nothing could be done (the outcome says why)
	EventFailed    = "failed"    // it could not be processed; its task is archived (the error says why)
)

// ProviderStripe is the only processor so far.
const ProviderStripe = "stripe"

// What an event asks the ledger to do.
const (
	ActionNone                 = ""                      // a type the service does not handle, or nothing to do
	ActionSale                 = "sale"                  // a one-time payment or a subscription invoice: record the sale
	ActionSubscriptionCheckout = "subscription_checkout" // a subscription checkout: attribute, remember the processor customer
	ActionInvoicePayment       = "invoice_payment"       // a payment of an invoice: link it to the invoice's sale
	ActionRefund               = "refund"                // refunds of a payment: reverse or reduce its commission
)

// Outcomes of skipped events that later events may revisit.
const (
	// SkipNoAttribution: no customer of the program matched the payment.
	// A subscription checkout that attributes its customer later revisits
	// the subscription's invoices skipped for this reason.
	SkipNoAttribution = "no attribution: no click, lead, processor customer or customer key of the program matched"
)

// PaymentEvent is what one processor event means for the ledger, whatever
// the processor and its API version.
type PaymentEvent struct {
	EventID  string
	Type     string
	Action   string
	Skip     string // why an event of a handled type asks for nothing ("" when it acts)
	Created  time.Time
	Livemode bool

	// Sales and subscription checkouts.
	TransactionID     string // the checkout session id or the invoice id: the sale's transaction_id
	AmountCents       int64  // minor units, as the processor sends them
	Currency          string // as sent (Stripe: lower case)
	OccurredAt        time.Time
	PaymentID         string // the payment intent (else charge) that paid it; links processor refunds
	CustomerID        string // the processor's customer id (cus_…)
	Email             string // the buyer's email, as sent
	ClientReferenceID string
	Metadata          map[string]string // the checkout's, or the subscription's for an invoice
	SubscriptionID    string
	SaleType          string
	IsRecurring       bool

	// Invoice payments: PaymentID paid the invoice TransactionID.

	// Refunds.
	ChargeID       string // the refunded charge; PaymentID is its payment intent
	AmountRefunded int64  // cumulative amount refunded on the charge
	Refunds        []ProcessorRefund
}

// ProcessorRefund is one refund a refund event lists.
type ProcessorRefund struct {
	ID          string
	AmountCents int64
	Currency    string
	Reason      string
	Created     time.Time
}

// MetadataKeys are the processor metadata keys a brand sets on a checkout
// session and on its subscription (subscription_data.metadata): the click
// id and the customer key carry the service's brand prefix; program_id
// names the program.
type MetadataKeys struct {
	ClickID     string // <prefix>_click_id
	CustomerKey string // <prefix>_customer_key
	ProgramID   string // program_id
}

// Legacy metadata keys of the reference service's integrations. The
// reference tracker's legacy cookie customer_code held the click id, so a
// customer_code value is read as a click id; partner_code names a partner's
// referral code there, never a customer, so it is read as a click id only
// when it is one of our click ids (any other value is ignored: a code alone
// says nothing about which visitor paid). customer_key is the key without
// the prefix.
const (
	LegacyClickKey       = "customer_code"
	LegacyPartnerCodeKey = "partner_code"
	LegacyCustomerKey    = "customer_key"
)

// NewMetadataKeys returns the metadata keys for a brand prefix (svc when
// empty).
func NewMetadataKeys(prefix string) MetadataKeys {
	if prefix == "" {
		prefix = "svc"
	}
	return MetadataKeys{ClickID: prefix + "_click_id", CustomerKey: prefix + "_customer_key", ProgramID: "program_id"}
}

// Hints are the attribution hints a payment's metadata carries.
type Hints struct {
	ClickID     string // "" when the metadata names no click
	CustomerKey string
	ProgramID   string // the program_id value as sent
}

// Hints reads the attribution hints of metadata: the prefixed keys first,
// then the legacy aliases.
func (k MetadataKeys) Hints(meta map[string]string) Hints {
	get := func(key string) string { return strings.TrimSpace(meta[key]) }
	h := Hints{ClickID: get(k.ClickID), CustomerKey: get(k.CustomerKey), ProgramID: get(k.ProgramID)}
	if h.ClickID == "" {
		h.ClickID = get(LegacyClickKey)
	}
	if h.ClickID == "" {
		if code := get(LegacyPartnerCodeKey); isClickID(code) {
			h.ClickID = code
		}
	}
	if h.CustomerKey == "" {
		h.CustomerKey = get(LegacyCustomerKey)
	}
	if h.CustomerKey != "" && !ValidCustomerKey(h.CustomerKey) {
		h.CustomerKey = "" // a key the brand could never have saved names no one
	}
	return h
}

func isClickID(s string) bool {
	_, ok := ClickTime(s)
	return ok
}

// OtherProgram reports whether the metadata's program_id names a program
// other than programID. Only a decimal id counts: a placeholder such as
// "YOUR_PROGRAM_ID" names no program and is ignored.
func (h Hints) OtherProgram(programID int64) bool {
	n, err := strconv.ParseInt(h.ProgramID, 10, 64)
	return err == nil && n > 0 && n != programID
}

// Attribution steps, in the spec's order.
const (
	StepClickID           = "click_id"            // (1) the click id of the metadata
	StepEmail             = "email"               // (2) the buyer's email matched to a lead of the program
	StepProcessorCustomer = "processor_customer"  // (3) the processor customer id of an earlier attributed payment
	StepClientReference   = "client_reference_id" // (4) client_reference_id, only when the metadata names no click
	StepCustomerKey       = "customer_key"        // (5) the customer key alone, matched to a settled lead's key
)

// AttributionStep is one way to find a payment's customer.
type AttributionStep struct {
	Kind  string
	Value string
}

// AttributionPlan lists, in the spec's order, the ways to find the
// customer of a payment; the first that finds a customer of the program
// wins. Steps without a value are left out, and client_reference_id is used
// only when the metadata names no click (the brand's own metadata wins over
// what a page wrote into the checkout).
func AttributionPlan(e *PaymentEvent, keys MetadataKeys) []AttributionStep {
	h := keys.Hints(e.Metadata)
	var plan []AttributionStep
	add := func(kind, value string) {
		if value = strings.TrimSpace(value); value != "" {
			plan = append(plan, AttributionStep{Kind: kind, Value: value})
		}
	}
	add(StepClickID, h.ClickID)
	if email, ok := NormalizeEmail(e.Email); ok {
		add(StepEmail, email)
	}
	add(StepProcessorCustomer, e.CustomerID)
	if h.ClickID == "" && ValidClickIDShape(strings.TrimSpace(e.ClientReferenceID)) {
		add(StepClientReference, e.ClientReferenceID)
	}
	add(StepCustomerKey, h.CustomerKey)
	return plan
}

// QualifiesForSettlement reports whether the event can settle a provisional
// lead of its customer: a one-time payment completion or a subscription
// invoice that was paid (Lead (browser mode) in the spec).
func (e *PaymentEvent) QualifiesForSettlement() bool {
	return e.Action == ActionSale && e.Skip == "" && e.AmountCents > 0
}

// ReceivedEvent is a processor event whose signature the edge verified.
type ReceivedEvent struct {
	EventID   string
	Provider  string // ProviderStripe
	AccountID string // the connected account the event names ("" when none)
	ProgramID int64  // the program of a brand-added webhook; 0 when the account names it
	Type      string
	Livemode  bool
	Payload   []byte // the event the processor signed, re-encoded for storage (StorableJSON)
}

// ReceiveResult says what receiving an event did.
type ReceiveResult struct {
	Duplicate bool // the event id was already stored: nothing new was stored
	Enqueued  bool // the event is on the processor queue (else the sweep queues it)
}

// ProcessorInbox stores verified processor events and hands them to the
// processor queue.
type ProcessorInbox interface {
	// Receive stores the event unless its id is already stored (a
	// redelivery stores nothing), then queues it with the event id as
	// task id. A failed enqueue leaves the event for SweepEvents: the
	// event is safe once Receive returns without error.
	Receive(ctx context.Context, ev ReceivedEvent) (*ReceiveResult, error)
	// WebhookSecret returns the signing secret of a program's brand-added
	// webhook ("" when none is set). Errors: ENotFound (no such program).
	WebhookSecret(ctx context.Context, programID int64) (string, error)
	// SweepEvents queues stored events that are not queued yet and were
	// received more than grace ago, at most limit of them, and reports how
	// many it queued.
	SweepEvents(ctx context.Context, grace time.Duration, limit int) (int, error)
}

// ProcessorEnqueuer puts stored processor events on the processor queue.
// Queueing an event twice must be harmless (the asynq implementation uses
// the event id as task id).
type ProcessorEnqueuer interface {
	EnqueueProcessorEvents(ctx context.Context, eventIDs []string) (sent []string, err error)
}

// ProcessResult says what processing an event did.
type ProcessResult struct {
	EventID    string
	Type       string
	Status     string // EventProcessed or EventSkipped
	Outcome    string // what was done, or why nothing was
	ProgramID  int64
	CustomerID int64 // the attributed customer (0 when none)
	// AttributedBy is the attribution step that found the customer (a
	// Step* constant; "" when none ran or none found one).
	AttributedBy string
	SaleID       int64 // the sale recorded or refunded (0 when none)
	Settled      bool  // a provisional lead of the customer settled
}

// PaymentEventService processes stored processor events.
type PaymentEventService interface {
	// ProcessEvent processes a stored event once: it records the sale, the
	// refunds or the processor customer id the event asks for, settles the
	// customer's provisional lead when the payment qualifies, and records
	// the outcome on the stored event. Processing an event again does
	// nothing more. Errors: ENotFound (no such stored event), EInvalid (the
	// stored event cannot be decoded: it never will be); any other error
	// is worth a retry.
	ProcessEvent(ctx context.Context, eventID string) (*ProcessResult, error)
	// RecordFailure notes a failed attempt on the stored event; final marks
	// it failed (its task is archived).
	RecordFailure(ctx context.Context, eventID, reason string, final bool) error
}
