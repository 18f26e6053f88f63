package ingest

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/apidoc"
)

// fiberParam matches a fiber path parameter (":id"), which the document
// writes "{id}".
var fiberParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestOpenAPIDescribesEveryRoute checks that every route the edge
// registers is in the document and every documented operation is a
// registered route, with the edge built with every optional route on
// (metrics, the queue dashboard).
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	b := setup(t)
	srv := newTestServer(b.db, b.clock, func(_ *Services, o *Options) {
		o.Metrics = http.NotFoundHandler()
		o.Queues = http.NotFoundHandler()
	})
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}

	registered := map[string]bool{}
	for _, r := range srv.App().GetRoutes(true) {
		if r.Method == http.MethodHead {
			continue // fiber answers HEAD for every GET
		}
		registered[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	// The queue dashboard is mounted with Use; its entry page is documented.
	registered["GET "+queuesPath] = true
	// The brand's tracker path follows BRAND_PREFIX; the document says so
	// with a parameter.
	brandTracker := "GET /js/" + srv.cfg.BrandPrefix + "-tracker.js"
	if !registered[brandTracker] {
		t.Fatalf("no %s registered", brandTracker)
	}
	delete(registered, brandTracker)
	registered["GET /js/{brandPrefix}-tracker.js"] = true

	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, route := range slices.Sorted(maps.Keys(registered)) {
		if !documented[route] {
			t.Errorf("route %s is not in openapi.yaml", route)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(documented)) {
		if !registered[op] {
			t.Errorf("openapi.yaml documents %s, which the edge does not register", op)
		}
	}
}
