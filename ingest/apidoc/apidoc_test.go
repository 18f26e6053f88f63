package apidoc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestDocumentLoads(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	raw, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("JSON does not decode: %v", err)
	}
	if back["openapi"] != "3.1.0" || back["paths"] == nil {
		t.Errorf("JSON lost the version or the paths: %.200s", raw)
	}
}

func TestReferenceListsEveryOperation(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	page, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId (the client and the page need one)", method, path)
			}
			if !bytes.Contains(page, []byte(`id="`+op.OperationID+`"`)) {
				t.Errorf("%s %s (%s) missing from the reference page", method, path, op.OperationID)
			}
		}
	}
}
