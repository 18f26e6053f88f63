package ledger

import (
	"context"
	"time"
)

// An endpoint's delivery log as the dashboard shows it (one entry per
// message, however many attempts it took), and the test event a brand
// sends to one endpoint to check its receiver.

// EventWebhookTest is the type of the test event. It is no subscription:
// it goes only to the endpoint it is sent to, whatever its events.
const EventWebhookTest = "webhook.test"

// Delivery listing bounds.
const (
	DefaultWebhookDeliveries = 50
	MaxWebhookDeliveries     = 100
	MsgWebhookDeliveryLimit  = "limit must be an integer from 1 to 100"
)

// Outcomes of a delivery.
const (
	DeliverySucceeded = "succeeded" // an attempt got a 2xx answer
	DeliveryFailed    = "failed"    // no attempt did yet (it may still be retried)
)

// WebhookDeliveryLimit validates ?limit= of the delivery listing: absent
// is DefaultWebhookDeliveries.
func WebhookDeliveryLimit(in Input[int64]) (int, error) {
	if !in.Present {
		return DefaultWebhookDeliveries, nil
	}
	if in.Bad || in.Value < 1 || in.Value > MaxWebhookDeliveries {
		return 0, NewError(EInvalid, MsgWebhookDeliveryLimit)
	}
	return int(in.Value), nil
}

// WebhookDelivery is one message to one endpoint and what its attempts
// came to. StatusCode, Error and LatencyMS are the last attempt's.
type WebhookDelivery struct {
	ID            int64 // the last attempt's row
	EndpointID    int64
	MessageID     string
	EventType     string
	Succeeded     bool
	Attempts      int
	StatusCode    *int
	Error         string
	LatencyMS     int
	FirstAttempt  time.Time
	LastAttemptAt time.Time
}

// Status is the delivery's outcome: DeliverySucceeded or DeliveryFailed.
func (d WebhookDelivery) Status() string {
	if d.Succeeded {
		return DeliverySucceeded
	}
	return DeliveryFailed
}

// WebhookTestData is the data of a test event: which program and endpoint
// it came from, so a receiver can tell it apart from real events.
type WebhookTestData struct {
	ProgramID   int64  `json:"program_id"`
	ProgramName string `json:"program_name"`
	EndpointID  int64  `json:"endpoint_id"`
	Test        bool   `json:"test"`
	Message     string `json:"message"`
}

// NewWebhookTestData is the data of the test event of an endpoint.
func NewWebhookTestData(programID int64, programName string, endpointID int64) WebhookTestData {
	return WebhookTestData{ProgramID: programID, ProgramName: programName, EndpointID: endpointID, Test: true,
		Message: "Test event sent from the dashboard of " + programName + "."}
}

// WebhookTestSent is a test event written to the outbox.
type WebhookTestSent struct {
	OutboxID  int64
	MessageID string
	CreatedAt time.Time
}

// WebhookDeliveryService is an endpoint's delivery log and its test event.
type WebhookDeliveryService interface {
	// Deliveries lists the endpoint's last limit messages, the one
	// attempted last first. Errors: ENotFound (MsgWebhookNotFound: no live
	// endpoint of that id in the program).
	Deliveries(ctx context.Context, programID, endpointID int64, limit int) ([]WebhookDelivery, error)
	// SendTestEvent writes a webhook.test message for the endpoint to the
	// outbox, relayed after commit and delivered like any event (signed,
	// retried, logged). Errors: ENotFound (MsgWebhookNotFound).
	SendTestEvent(ctx context.Context, programID, endpointID int64) (*WebhookTestSent, error)
}
