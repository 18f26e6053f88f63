package ingest

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

const msgNoTrackingList = "You do not have tracking:list access to this program"

// listTrackingEvents is GET /api/tracking/events/:programId: the program's
// clicks, leads and conversions, normalized, newest first, each type
// capped at 3 × pageSize before the merge.
func (s *Server) listTrackingEvents(c *fiber.Ctx) error {
	programID, err := s.programWithPermission(c, "programId", ledger.PermTrackingList, msgNoTrackingList)
	if err != nil {
		return err
	}
	q, err := ledger.EventQueryInput{
		Page:      queryInt(c, "page"),
		PageSize:  queryInt(c, "pageSize"),
		EventType: queryString(c, "eventType"),
		DateFrom:  queryString(c, "dateFrom"),
		DateTo:    queryString(c, "dateTo"),
	}.Validate(programID)
	if err != nil {
		return err
	}
	page, err := s.svc.Events.TrackingEvents(c.UserContext(), q)
	if err != nil {
		return err
	}
	data := make([]fiber.Map, len(page.Events))
	for i := range page.Events {
		data[i] = eventJSON(&page.Events[i])
	}
	return renderPage(c, data, int64(page.Page), int64(page.PageSize), int64(page.PageCount()), int64(page.Total))
}

// queryString reads a query parameter; an empty one is absent. The value
// is a copy: fasthttp reuses the request's buffer once the handler
// returns, and a CSV export streams after that.
func queryString(c *fiber.Ctx, name string) ledger.Input[string] {
	v := c.Query(name)
	if v == "" {
		return ledger.Input[string]{}
	}
	return ledger.Some(strings.Clone(v))
}

// queryInt reads an integer query parameter; an empty one is absent.
func queryInt(c *fiber.Ctx, name string) ledger.Input[int64] {
	v := c.Query(name)
	if v == "" {
		return ledger.Input[int64]{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return ledger.BadInput[int64]()
	}
	return ledger.Some(n)
}

// eventJSON renders a tracking event with the fields the spec lists for
// its type; a value the source event does not carry is null.
func eventJSON(e *ledger.TrackingEvent) fiber.Map {
	m := fiber.Map{
		"id":         e.ID,
		"event_type": string(e.Type),
		"timestamp":  formatTime(e.Timestamp),
		"click_id":   e.ClickID,
		"createdAt":  formatTime(e.CreatedAt),
	}
	switch e.Type {
	case ledger.EventClick:
		m["session_id"] = e.SessionID
		m["page_url"] = e.PageURL
		m["referrer_url"] = e.ReferrerURL
		m["geo_country"] = e.GeoCountry
		m["geo_region"] = e.GeoRegion
		m["geo_city"] = e.GeoCity
		m["device_type"] = e.DeviceType
		m["device_os"] = e.DeviceOS
		m["browser_name"] = e.BrowserName
		m["converted"] = e.Converted
	case ledger.EventLead:
		m["session_id"] = e.SessionID
		m["page_url"] = e.PageURL
		m["customer_key"] = e.CustomerKey
		m["converted"] = e.Converted
	case ledger.EventConversion:
		m["amount_cents"] = e.AmountCents
		m["currency"] = e.Currency
		m["sale_type"] = e.SaleType
		m["payment_status"] = e.PaymentStatus
		m["processor_event_id"] = e.ProcessorEventID
		m["is_recurring"] = e.IsRecurring
	}
	return m
}
