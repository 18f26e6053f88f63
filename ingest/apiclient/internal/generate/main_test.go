package main

import (
	"os"
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
