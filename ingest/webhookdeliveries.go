package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// A webhook endpoint's delivery log and its test event, for the
// dashboard's settings page (owner or admin, like the other webhook
// routes). Registered by dashboardAPIRoutes.

// Limits of the delivery routes, per minute and token: the test event
// makes an outbound call, so it gets a small bucket of its own.
const (
	limitWebhookLog  = 120
	limitWebhookTest = 10
)

// webhookEndpoint authorises a delivery route: the program of the path
// (an owner or admin of its workspace) and the endpoint id.
func (s *Server) webhookEndpoint(c *fiber.Ctx) (programID, endpointID int64, err error) {
	if programID, err = s.webhookProgram(c); err != nil {
		return 0, 0, err
	}
	if endpointID, err = pathID(c, "webhookId", "webhook"); err != nil {
		return 0, 0, err
	}
	return programID, endpointID, nil
}

// listWebhookDeliveries is GET …/webhooks/:webhookId/deliveries?limit=:
// the endpoint's last messages (50 unless limit says 1 to 100), the one
// attempted last first, each with its outcome and attempts.
func (s *Server) listWebhookDeliveries(c *fiber.Ctx) error {
	programID, endpointID, err := s.webhookEndpoint(c)
	if err != nil {
		return err
	}
	limit, err := ledger.WebhookDeliveryLimit(queryInt(c, "limit"))
	if err != nil {
		return err
	}
	list, err := s.svc.WebhookDeliveries.Deliveries(c.UserContext(), programID, endpointID, limit)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, len(list))
	for i, d := range list {
		out[i] = webhookDeliveryJSON(d)
	}
	return ok(c, fiber.StatusOK, out)
}

func webhookDeliveryJSON(d ledger.WebhookDelivery) fiber.Map {
	return fiber.Map{
		"id":              d.ID,
		"endpoint_id":     d.EndpointID,
		"message_id":      d.MessageID,
		"event_type":      d.EventType,
		"status":          d.Status(),
		"attempts":        d.Attempts,
		"status_code":     d.StatusCode,
		"error":           nullIfBlank(d.Error),
		"latency_ms":      d.LatencyMS,
		"created_at":      formatTime(d.FirstAttempt),
		"last_attempt_at": formatTime(d.LastAttemptAt),
	}
}

// sendWebhookTestEvent is POST …/webhooks/:webhookId/test: a webhook.test
// event for that endpoint only, through the outbox (signed, retried and
// logged like any event); 202 with the outbox message id.
func (s *Server) sendWebhookTestEvent(c *fiber.Ctx) error {
	programID, endpointID, err := s.webhookEndpoint(c)
	if err != nil {
		return err
	}
	sent, err := s.svc.WebhookDeliveries.SendTestEvent(c.UserContext(), programID, endpointID)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusAccepted, fiber.Map{
		"outbox_id":   sent.OutboxID,
		"message_id":  sent.MessageID,
		"endpoint_id": endpointID,
		"event_type":  ledger.EventWebhookTest,
		"created_at":  formatTime(sent.CreatedAt),
	})
}
