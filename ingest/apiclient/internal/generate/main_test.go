package main

import (
	"os"
	"strings"
	"testing"
)

// TestClientIsCurrent fails when ingest/apidoc/openapi.yaml changed and
// `go generate ./ingest/apiclient` was not run.
func TestClientIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("ingest/apiclient/client.gen.go is not generated from the current openapi.yaml: run go generate ./ingest/apiclient")
	}
}

// TestClientHasNoFloats keeps money exact in the client: every number of
// the document is an integer or a json.Number (x-go-type), never a float.
func TestClientHasNoFloats(t *testing.T) {
	code, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(code, "\n") {
		if strings.Contains(line, "float32") || strings.Contains(line, "float64") {
			t.Errorf("client.gen.go:%d has a float: %s (give the number x-go-type: json.Number)", i+1, strings.TrimSpace(line))
		}
	}
}
