package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// notificationsShown is how many of the newest notifications the page
// lists (the API's most).
const notificationsShown = 100

// partnerNotifications is GET /partner/notifications: the partner's
// newest notifications, each marked read or unread in words, with a form
// to mark one read and one to mark them all.
func (p *Pages) partnerNotifications(c *fiber.Ctx) error {
	ctx, auth := p.as(c)
	resp, err := p.api.PartnerNotificationsWithResponse(ctx, &apiclient.PartnerNotificationsParams{Limit: apiclient.Ptr(notificationsShown)}, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	unread := 0
	for _, n := range resp.JSON200.Data {
		if n.ReadAt == nil {
			unread++
		}
	}
	return p.render(c, fiber.StatusOK, "partner_notifications", view{Title: "Notifications", Tab: "notifications", Data: map[string]any{
		"Notifications": resp.JSON200.Data, "Unread": unread, "Limit": notificationsShown,
	}})
}

// partnerReadNotification is the "Mark read" form of one notification;
// another partner's is the API's 404, shown as the error page.
func (p *Pages) partnerReadNotification(c *fiber.Ctx) error {
	id, err := pathID(c, "notificationId")
	if err != nil {
		return err
	}
	ctx, auth := p.as(c)
	resp, err := p.api.ReadPartnerNotificationWithResponse(ctx, id, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	return p.flash(c, "Marked read: "+resp.JSON200.Data.Title+".", "/partner/notifications")
}

// partnerReadAllNotifications is the "Mark all read" form.
func (p *Pages) partnerReadAllNotifications(c *fiber.Ctx) error {
	ctx, auth := p.as(c)
	resp, err := p.api.ReadAllPartnerNotificationsWithResponse(ctx, auth)
	if err = apiCheck(resp, err); err != nil {
		return err
	}
	msg := "All notifications marked read."
	if n := resp.JSON200.Data.Updated; n == 1 {
		msg = "1 notification marked read."
	} else if n > 1 {
		msg = count(n) + " notifications marked read."
	}
	return p.flash(c, msg, "/partner/notifications")
}
