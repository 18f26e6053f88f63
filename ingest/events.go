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
	data := make([]any, len(page.Events))
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
// its type; a value the source event does not carry is null. The three
// shapes are structs rather than maps: a page of a hundred events encoded
// from maps spent most of its JSON time building the maps and sorting
// their keys (docs/decisions.md, "The listing's rows as structs").
func eventJSON(e *ledger.TrackingEvent) any {
	head := eventHead{ID: e.ID, EventType: string(e.Type), Timestamp: formatTime(e.Timestamp),
		ClickID: e.ClickID, CreatedAt: formatTime(e.CreatedAt)}
	visit := visitFields{SessionID: e.SessionID, PageURL: e.PageURL, Converted: e.Converted}
	switch e.Type {
	case ledger.EventClick:
		return &clickEventJSON{eventHead: head, visitFields: visit,
			ReferrerURL: e.ReferrerURL, GeoCountry: e.GeoCountry, GeoRegion: e.GeoRegion, GeoCity: e.GeoCity,
			DeviceType: e.DeviceType, DeviceOS: e.DeviceOS, BrowserName: e.BrowserName}
	case ledger.EventLead:
		return &leadEventJSON{eventHead: head, visitFields: visit, CustomerKey: e.CustomerKey}
	case ledger.EventConversion:
		return &conversionEventJSON{eventHead: head, AmountCents: e.AmountCents, Currency: e.Currency,
			SaleType: e.SaleType, PaymentStatus: e.PaymentStatus, ProcessorEventID: e.ProcessorEventID,
			IsRecurring: e.IsRecurring}
	}
	return &head
}

// eventHead holds the fields every type of tracking event carries.
type eventHead struct {
	ID        int64   `json:"id"`
	EventType string  `json:"event_type"`
	Timestamp string  `json:"timestamp"`
	ClickID   *string `json:"click_id"`
	CreatedAt string  `json:"createdAt"`
}

// visitFields are the fields clicks and leads carry and conversions do not.
type visitFields struct {
	SessionID *string `json:"session_id"`
	PageURL   *string `json:"page_url"`
	Converted bool    `json:"converted"`
}

type clickEventJSON struct {
	eventHead
	visitFields
	ReferrerURL *string `json:"referrer_url"`
	GeoCountry  *string `json:"geo_country"`
	GeoRegion   *string `json:"geo_region"`
	GeoCity     *string `json:"geo_city"`
	DeviceType  *string `json:"device_type"`
	DeviceOS    *string `json:"device_os"`
	BrowserName *string `json:"browser_name"`
}

type leadEventJSON struct {
	eventHead
	visitFields
	CustomerKey *string `json:"customer_key"`
}

type conversionEventJSON struct {
	eventHead
	AmountCents      int64  `json:"amount_cents"`
	Currency         string `json:"currency"`
	SaleType         string `json:"sale_type"`
	PaymentStatus    string `json:"payment_status"`
	ProcessorEventID string `json:"processor_event_id"`
	IsRecurring      bool   `json:"is_recurring"`
}
