// Package apidoc holds the service's OpenAPI 3.1 description
// (openapi.yaml): the edge serves it as JSON at /openapi.json and renders
// the reference page at /docs/api from it; the tests validate every
// request and answer against it (package apitest), and the Go client in
// ingest/apiclient is generated from it.
package apidoc

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var source []byte

// YAML is the document as written.
func YAML() []byte { return source }

var loaded = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(source)
	if err != nil {
		return nil, fmt.Errorf("apidoc: load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("apidoc: openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// Load returns the parsed and validated document. The result is shared:
// callers must not change it.
func Load() (*openapi3.T, error) { return loaded() }

var asJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
})

// JSON returns the document encoded as JSON, as /openapi.json serves it.
func JSON() ([]byte, error) { return asJSON() }
