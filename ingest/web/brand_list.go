package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

// Helpers of the brand's listing pages (commissions, payouts, events):
// filters read from the page's query and passed to the API as sent, pages
// of results, CSV downloads proxied from the API, and refusals placed on
// the field they name.

// filterForm reads a listing's GET filter form from the page's query.
func filterForm(c *fiber.Ctx, names ...string) *form {
	f := &form{Name: "filter", Values: map[string]string{}, Errors: map[string]string{}, order: names}
	for _, n := range names {
		f.Values[n] = strings.TrimSpace(c.Query(n))
	}
	return f
}

// query is the form's non-empty values as a query string ("" when none),
// to keep the filters in page links, form targets and redirects.
func (f *form) query(extra ...string) string {
	q := url.Values{}
	for k, v := range f.Values {
		if v != "" {
			q.Set(k, v)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// rawQuery sets the filter values on the API request verbatim, so that a
// value the typed parameters could not hold ("page=abc", a misspelt
// date) still reaches the API, and the page shows the API's own refusal.
func rawQuery(values map[string]string) apiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		q := req.URL.Query()
		for k, v := range values {
			if v != "" {
				q.Set(k, v)
			}
		}
		req.URL.RawQuery = q.Encode()
		return nil
	}
}

// pager is a listing's position, with links to the pages either side
// that keep the filters.
type pager struct {
	Page, PageCount, Total int
	Prev, Next             string // "" at either end
}

func newPager(base string, f *form, page, pageCount, total int) pager {
	p := pager{Page: page, PageCount: pageCount, Total: total}
	if page > 1 {
		p.Prev = base + f.query("page", strconv.Itoa(page-1))
	}
	if page < pageCount {
		p.Next = base + f.query("page", strconv.Itoa(page+1))
	}
	return p
}

// refuseField places an API refusal on the field its message starts with
// ("domain must be a host name …" on domain), before form.refuse's looser
// search, which could pick a field the message merely mentions (name).
func refuseField(f *form, err error) (int, bool) {
	if re, ok := asResponseError(err); ok && re.Status < 500 && re.Status != fiber.StatusUnauthorized {
		first, _, _ := strings.Cut(re.Message, " ")
		if _, known := f.Values[first]; known {
			f.Errors[first] = re.Message
			return re.Status, true
		}
	}
	return f.refuse(err)
}

// sendCSV answers a download with the API's CSV: its body and content
// type, as an attachment (the API's file name when it gives one).
func sendCSV(c *fiber.Ctx, resp *http.Response, body []byte, filename string) error {
	c.Set(fiber.HeaderContentType, resp.Header.Get(fiber.HeaderContentType))
	disp := resp.Header.Get(fiber.HeaderContentDisposition)
	if !strings.HasPrefix(disp, "attachment") {
		disp = "attachment; filename=" + filename
	}
	c.Set(fiber.HeaderContentDisposition, disp)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusOK).Send(body)
}

// programPath is the page of a brand program's tab: /app/programs/<id>/<tab>.
func programPath(id int64, tab string) string {
	return "/app/programs/" + strconv.FormatInt(id, 10) + "/" + tab
}
