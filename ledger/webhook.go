package ledger

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Brand webhooks. A brand registers endpoints per program (URL, event
// types); every change the brand subscribes to is written to the outbox in
// the transaction of the change, one row per subscribed endpoint, and
// delivered from the webhooks queue, signed per the Standard Webhooks
// convention (package notify).

// Where brand webhook deliveries go in the outbox: the task type and the
// queue (before any namespace) that package workers/tasks routes.
const (
	OutboxTaskWebhook   = "webhook:deliver"
	OutboxQueueWebhooks = "webhooks"
)

// The event types of the contract.
const (
	EventLeadCreated        = "lead.created"
	EventSaleCreated        = "sale.created"
	EventCommissionCreated  = "commission.created"
	EventCommissionReversed = "commission.reversed"
	EventCommissionRefunded = "commission.refunded"
	// The brand's partner program (issue 24).
	EventPartnerEnrolled    = "partner.enrolled"
	EventPartnerSuspended   = "partner.suspended"
	EventCommissionApproved = "commission.approved"
	EventCommissionRejected = "commission.rejected"
	// Payouts (issue 26).
	EventPayoutCreated = "payout.created"
	EventPayoutPaid    = "payout.paid"
	EventPayoutFailed  = "payout.failed"
)

const (
	webhookSecretPrefix      = "whsec_"
	webhookSecretBytes       = 32
	maxWebhookURLLen         = 2048
	webhookMessageIDPrefix   = "msg_"
	webhookEventTypesMessage = "lead.created, sale.created, commission.created, commission.reversed, commission.refunded, " +
		"partner.enrolled, partner.suspended, commission.approved, commission.rejected, " +
		"payout.created, payout.paid, payout.failed"
)

// WebhookEventTypes lists the event types in the contract's order.
var WebhookEventTypes = []string{EventLeadCreated, EventSaleCreated, EventCommissionCreated,
	EventCommissionReversed, EventCommissionRefunded,
	EventPartnerEnrolled, EventPartnerSuspended, EventCommissionApproved, EventCommissionRejected,
	EventPayoutCreated, EventPayoutPaid, EventPayoutFailed}

// ValidWebhookEvent reports whether s names an event type.
func ValidWebhookEvent(s string) bool {
	for _, e := range WebhookEventTypes {
		if s == e {
			return true
		}
	}
	return false
}

// Messages of webhook registration.
const (
	MsgWebhookURL        = "url must be an absolute http or https URL of at most 2048 characters"
	MsgWebhookEvents     = "events must be a non-empty array of: " + webhookEventTypesMessage
	MsgWebhookPrivate    = "url must not point to a loopback, private or link-local address"
	MsgWebhookUnresolved = "url host could not be resolved"
	MsgWebhookManage     = "Only a workspace owner or admin can manage the program's webhooks"
	MsgWebhookNotFound   = "webhook not found"
)

// WebhookInput is an endpoint as the brand registers it.
type WebhookInput struct {
	URL    Input[string]
	Events Input[[]string]
}

// Validate checks the URL's shape (not where it points: see TargetChecker)
// and the event types, and returns them normalised (events deduplicated,
// in the contract's order).
func (in WebhookInput) Validate() (string, []string, error) {
	raw := strings.TrimSpace(in.URL.Value)
	if !in.URL.OK() || raw == "" || len(raw) > maxWebhookURLLen {
		return "", nil, NewError(EInvalid, MsgWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return "", nil, NewError(EInvalid, MsgWebhookURL)
	}
	if !in.Events.OK() || len(in.Events.Value) == 0 {
		return "", nil, NewError(EInvalid, MsgWebhookEvents)
	}
	seen := map[string]bool{}
	for _, e := range in.Events.Value {
		if !ValidWebhookEvent(e) {
			return "", nil, NewError(EInvalid, MsgWebhookEvents)
		}
		seen[e] = true
	}
	events := make([]string, 0, len(seen))
	for _, e := range WebhookEventTypes {
		if seen[e] {
			events = append(events, e)
		}
	}
	return raw, events, nil
}

// NewWebhookSecret returns a signing secret in the Standard Webhooks form:
// whsec_ followed by the base64 of 256 random bits.
func NewWebhookSecret() string {
	b := make([]byte, webhookSecretBytes)
	if _, err := rand.Read(b); err != nil {
		panic("ledger: crypto/rand failed: " + err.Error())
	}
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// NewWebhookMessageID returns a webhook-id: msg_ and a ULID, unique across
// all messages and kept by every retry of the message.
func NewWebhookMessageID(now time.Time) string {
	id, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		panic("ledger: crypto/rand failed: " + err.Error())
	}
	return webhookMessageIDPrefix + strings.ToLower(id.String())
}

// TargetChecker tells whether a webhook URL may be called: it refuses URLs
// whose host resolves to a loopback, private or link-local address (unless
// the deployment allows them). Errors: EInvalid.
type TargetChecker interface {
	CheckTarget(ctx context.Context, rawURL string) error
}

// WebhookEndpoint is a registered endpoint. Secret is set only when the
// endpoint is created: it is shown once.
type WebhookEndpoint struct {
	ID         int64
	ProgramID  int64
	URL        string
	Events     []string
	Secret     string
	CreatedAt  time.Time
	Deliveries []WebhookAttempt // the most recent first
}

// WebhookAttempt is one entry of an endpoint's delivery log: one HTTP
// attempt of one message.
type WebhookAttempt struct {
	ID         int64
	EndpointID int64
	MessageID  string
	EventType  string
	Attempt    int
	StatusCode *int // nil when no response arrived
	LatencyMS  int
	Error      string
	CreatedAt  time.Time
}

// Succeeded reports whether the receiver accepted the message (2xx).
func (a WebhookAttempt) Succeeded() bool {
	return a.StatusCode != nil && *a.StatusCode >= 200 && *a.StatusCode < 300
}

// WebhookService manages a program's endpoints.
type WebhookService interface {
	// CreateEndpoint registers an endpoint and returns it with its secret.
	// Errors: EInvalid (URL, events, a refused target), ENotFound (program).
	CreateEndpoint(ctx context.Context, programID int64, in WebhookInput) (*WebhookEndpoint, error)
	// Endpoints lists a program's endpoints, oldest first, each with its
	// most recent deliveries (at most deliveries of them).
	Endpoints(ctx context.Context, programID int64, deliveries int) ([]WebhookEndpoint, error)
	// DeleteEndpoint removes an endpoint; messages still queued for it are
	// dropped. Errors: ENotFound.
	DeleteEndpoint(ctx context.Context, programID, endpointID int64) error
}

// WebhookMessage is one delivery to one endpoint, as the outbox holds it.
// Body is the exact JSON the endpoint receives on every attempt.
type WebhookMessage struct {
	EndpointID int64     `json:"endpoint_id"`
	MessageID  string    `json:"message_id"`
	EventType  string    `json:"event_type"`
	Body       string    `json:"body"`
	CreatedAt  time.Time `json:"created_at"`
}

// WebhookEvent is the body of a delivery.
type WebhookEvent struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// WebhookBody renders the body of an event that happened at now.
func WebhookBody(eventType string, now time.Time, data any) (string, error) {
	b, err := json.Marshal(WebhookEvent{Type: eventType, Timestamp: FormatTime(now), Data: data})
	return string(b), err
}

// WebhookTarget is what a delivery needs to know about its endpoint.
type WebhookTarget struct {
	EndpointID int64
	ProgramID  int64
	URL        string
	Secret     string
	Deleted    bool
}

// WebhookStore is the delivery side of brand webhooks.
type WebhookStore interface {
	// WebhookTarget returns an endpoint, deleted or not. Errors: ENotFound.
	WebhookTarget(ctx context.Context, endpointID int64) (*WebhookTarget, error)
	// WebhookDelivered reports whether the endpoint already accepted the
	// message (a redelivered task then sends nothing).
	WebhookDelivered(ctx context.Context, endpointID int64, messageID string) (bool, error)
	// LogWebhookAttempt appends an attempt to the endpoint's delivery log.
	LogWebhookAttempt(ctx context.Context, a WebhookAttempt) error
}

// FormatTime renders times as the API does: ISO 8601 in UTC with
// milliseconds.
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// MajorNumber renders minor units as an exact JSON number in major units.
func MajorNumber(minor int64, c Currency) json.Number {
	return json.Number(MinorToMajor(minor, c).String())
}

// LeadEventData is the data of lead.created: a lead that counts (settled
// on arrival, or a provisional one settled later).
type LeadEventData struct {
	LeadID      int64   `json:"lead_id"`
	ProgramID   int64   `json:"program_id"`
	CustomerID  *int64  `json:"customer_id"`
	PartnerID   *int64  `json:"partner_id"`
	ClickID     *string `json:"click_id"`
	CustomerKey *string `json:"customer_key"`
	Mode        string  `json:"mode"`
	SettledBy   string  `json:"settled_by"`
	OccurredAt  string  `json:"occurred_at"`
	SettledAt   string  `json:"settled_at"`
}

// SaleEventData is the data of sale.created: an attributed sale.
type SaleEventData struct {
	SaleID        int64   `json:"sale_id"`
	ProgramID     int64   `json:"program_id"`
	TransactionID string  `json:"transaction_id"`
	AmountCents   int64   `json:"amount_cents"`
	Currency      string  `json:"currency"`
	CustomerID    *int64  `json:"customer_id"`
	PartnerID     *int64  `json:"partner_id"`
	ClickID       *string `json:"click_id"`
	CommissionID  *int64  `json:"commission_id"`
	SaleType      string  `json:"sale_type"`
	IsRecurring   bool    `json:"is_recurring"`
	OccurredAt    string  `json:"occurred_at"`
}

// CommissionEventData is the data of commission.created,
// commission.reversed and commission.refunded. Amounts are numbers in
// major units of the commission's currency, as everywhere in the API.
type CommissionEventData struct {
	CommissionID  int64        `json:"commission_id"`
	ProgramID     int64        `json:"program_id"`
	PartnerID     int64        `json:"partner_id"`
	SaleID        int64        `json:"sale_id"`
	TransactionID string       `json:"transaction_id"`
	Status        string       `json:"status"`
	Amount        json.Number  `json:"amount"`
	Currency      string       `json:"currency"`
	ApproveAfter  string       `json:"approve_after,omitempty"`
	Refund        *RefundEvent `json:"refund,omitempty"`
}

// RefundEvent describes, in a reversal's or refund's event, the refund
// that caused it.
type RefundEvent struct {
	AmountCents     int64       `json:"amount_cents"` // this refund, in the sale's unit
	DeductionAmount json.Number `json:"deduction_amount"`
	Reason          *string     `json:"reason"`
	PaidOut         bool        `json:"paid_out"`
}

// CommissionCreatedData is the data of commission.created.
func CommissionCreatedData(c *Commission) CommissionEventData {
	return CommissionEventData{
		CommissionID: c.ID, ProgramID: c.ProgramID, PartnerID: c.PartnerID, SaleID: c.SaleID,
		TransactionID: c.TransactionID, Status: c.Status, Amount: MajorNumber(c.AmountMinor, c.Currency),
		Currency: string(c.Currency), ApproveAfter: FormatTime(c.ApproveAfter),
	}
}

// RefundEventType is the event of a refund applied to a commission.
func RefundEventType(status string) string {
	if status == CommissionReversed {
		return EventCommissionReversed
	}
	return EventCommissionRefunded
}

// RefundEventData is the data of commission.reversed and
// commission.refunded.
func RefundEventData(r RefundNotice, saleID, refundCents int64) CommissionEventData {
	var reason *string
	if r.Reason != "" {
		reason = &r.Reason
	}
	return CommissionEventData{
		CommissionID: r.CommissionID, ProgramID: r.ProgramID, PartnerID: r.PartnerID, SaleID: saleID,
		TransactionID: r.TransactionID, Status: r.Status, Amount: MajorNumber(r.AmountMinor, r.Currency),
		Currency: string(r.Currency),
		Refund: &RefundEvent{AmountCents: refundCents, DeductionAmount: MajorNumber(r.DeductionMinor, r.Currency),
			Reason: reason, PaidOut: r.PaidOut},
	}
}

// PartnerEventData is the data of partner.enrolled (a partner became
// active in the program: an invite accepted, an application approved, by
// hand or automatically) and partner.suspended.
type PartnerEventData struct {
	PartnerID int64  `json:"partner_id"`
	ProgramID int64  `json:"program_id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Status    string `json:"status"` // the enrollment's, after the change
	GroupID   int64  `json:"group_id"`
	JoinedAt  string `json:"joined_at"` // when the enrollment was created
}

// CommissionApprovedData is the data of commission.approved: the
// commission after its approval (the brand's, or the scheduled one when
// its hold ended), with when it was approved.
type CommissionApprovedData struct {
	CommissionEventData
	ApprovedAt string `json:"approved_at"`
}

// NewCommissionApprovedData is the data of commission.approved for c,
// approved at.
func NewCommissionApprovedData(c *Commission, at time.Time) CommissionApprovedData {
	return CommissionApprovedData{CommissionEventData: CommissionCreatedData(c), ApprovedAt: FormatTime(at)}
}

// CommissionRejectedData is the data of commission.rejected: the
// commission after the brand's rejection (status rejected, or reversed
// when it had been approved; amount 0), the reason, the amount rejected
// and what came off the partner's balance (0 unless it was approved).
type CommissionRejectedData struct {
	CommissionEventData
	Reason          string      `json:"reason"`
	RejectedAmount  json.Number `json:"rejected_amount"`
	DeductionAmount json.Number `json:"deduction_amount"`
}

// NewCommissionRejectedData is the data of commission.rejected for c
// after its rejection, of rejectedMinor, deductionMinor of it taken from
// the balance.
func NewCommissionRejectedData(c *Commission, reason string, rejectedMinor, deductionMinor int64) CommissionRejectedData {
	d := CommissionRejectedData{CommissionEventData: CommissionCreatedData(c), Reason: reason,
		RejectedAmount: MajorNumber(rejectedMinor, c.Currency), DeductionAmount: MajorNumber(deductionMinor, c.Currency)}
	d.ApproveAfter = ""
	return d
}
