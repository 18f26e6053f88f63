package ingest

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Dashboard routes of a program's outbound webhooks and of the
// advertiser's notifications.

// webhookDeliveriesShown is how many recent deliveries a listing shows per
// endpoint.
const webhookDeliveriesShown = 20

// webhookProgram authorises a webhook route: the program of the path, and
// a signed-in owner or admin of its workspace.
func (s *Server) webhookProgram(c *fiber.Ctx) (int64, error) {
	return s.programWithPermission(c, "id", ledger.PermWebhooksManage, ledger.MsgWebhookManage)
}

// createWebhook registers an endpoint; the answer is the only time its
// signing secret is shown.
func (s *Server) createWebhook(c *fiber.Ctx) error {
	programID, err := s.webhookProgram(c)
	if err != nil {
		return err
	}
	f, err := parseFields(c)
	if err != nil {
		return err
	}
	e, err := s.svc.Webhooks.CreateEndpoint(c.UserContext(), programID,
		ledger.WebhookInput{URL: f.String("url"), Events: f.Strings("events")})
	if err != nil {
		return err
	}
	body := webhookJSON(e)
	body["secret"] = e.Secret
	delete(body, "deliveries")
	return ok(c, fiber.StatusCreated, body)
}

// listWebhooks lists the program's endpoints with their recent deliveries.
func (s *Server) listWebhooks(c *fiber.Ctx) error {
	programID, err := s.webhookProgram(c)
	if err != nil {
		return err
	}
	list, err := s.svc.Webhooks.Endpoints(c.UserContext(), programID, webhookDeliveriesShown)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(list))
	for i := range list {
		out = append(out, webhookJSON(&list[i]))
	}
	return ok(c, fiber.StatusOK, out)
}

// deleteWebhook removes an endpoint.
func (s *Server) deleteWebhook(c *fiber.Ctx) error {
	programID, err := s.webhookProgram(c)
	if err != nil {
		return err
	}
	endpointID, err := pathID(c, "webhookId", "webhook")
	if err != nil {
		return err
	}
	if err := s.svc.Webhooks.DeleteEndpoint(c.UserContext(), programID, endpointID); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"id": endpointID, "deleted": true})
}

func webhookJSON(e *ledger.WebhookEndpoint) fiber.Map {
	deliveries := make([]fiber.Map, 0, len(e.Deliveries))
	for _, d := range e.Deliveries {
		var errText any
		if d.Error != "" {
			errText = d.Error
		}
		deliveries = append(deliveries, fiber.Map{
			"id":          d.ID,
			"message_id":  d.MessageID,
			"event_type":  d.EventType,
			"attempt":     d.Attempt,
			"status_code": d.StatusCode,
			"latency_ms":  d.LatencyMS,
			"succeeded":   d.Succeeded(),
			"error":       errText,
			"created_at":  formatTime(d.CreatedAt),
		})
	}
	return fiber.Map{
		"id":         e.ID,
		"program_id": e.ProgramID,
		"url":        e.URL,
		"events":     e.Events,
		"created_at": formatTime(e.CreatedAt),
		"deliveries": deliveries,
	}
}

// programNotifications lists the advertiser's notifications about the
// program (manual-review warnings on refunds of commissions already paid
// out), newest first, to any member of its workspace.
func (s *Server) programNotifications(c *fiber.Ctx) error {
	programID, err := pathID(c, "id", "program")
	if err != nil {
		return err
	}
	if _, err := s.svc.Accounts.ProgramRole(c.UserContext(), sessionOf(c).UserID, programID); err != nil {
		return err
	}
	list, err := s.svc.Notifications.ProgramNotifications(c.UserContext(), programID, notificationsLimit)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, notificationsJSON(list))
}

func notificationsJSON(list []ledger.StoredNotification) []fiber.Map {
	out := make([]fiber.Map, 0, len(list))
	for _, n := range list {
		out = append(out, fiber.Map{
			"id":         n.ID,
			"kind":       n.Kind,
			"title":      n.Title,
			"body":       n.Body,
			"data":       n.Data,
			"created_at": formatTime(n.CreatedAt),
			"read_at":    optionalTime(n.ReadAt),
		})
	}
	return out
}
