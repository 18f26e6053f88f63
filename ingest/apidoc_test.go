package ingest

import (
	"strings"
	"testing"
)

func TestOpenAPIServed(t *testing.T) {
	b := setup(t)
	r := do(t, b.app, req{"GET", "/openapi.json", nil, nil})
	if r.Status != 200 || r.Body["openapi"] != "3.1.0" {
		t.Fatalf("/openapi.json: %d %.200s", r.Status, r.Raw)
	}
	if _, ok := r.Body["paths"].(map[string]any)["/docs/api"]; !ok {
		t.Errorf("/openapi.json lacks its own reference page")
	}
	page := do(t, b.app, req{"GET", "/docs/api", nil, nil})
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/docs/api: %d %s", page.Status, page.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(page.Raw), "getOpenAPI") {
		t.Errorf("/docs/api does not list the document's own route")
	}
}
