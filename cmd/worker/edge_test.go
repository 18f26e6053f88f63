package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/service/servicetest"

	"github.com/partnertrack/partnertrack/ingest/apidoc/apitest"

	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// startEdge serves the edge, built exactly as the edge binary builds it,
// on a free port of 127.0.0.1, next to the worker under test; it returns
// the base URL.
func startEdge(tb testing.TB, env map[string]string) string {
	tb.Helper()
	return servicetest.StartEdge(tb, env)
}

// testEnv is the environment of a process under test: the test's database,
// Redis and queue namespace, quiet logs, and the extra name, value pairs.
func testEnv(db *pgtest.DB, ns tasks.Namespace, extra ...string) map[string]string {
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns), "LOG_LEVEL": "error"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// MustRunWorker starts the real worker program with args.
func MustRunWorker(tb testing.TB, env map[string]string, args ...string) *Main {
	tb.Helper()
	m := NewMain()
	if err := m.ParseFlags(args, func(k string) string { return env[k] }); err != nil {
		tb.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// call sends a JSON request and decodes the JSON answer.
func call(tb testing.TB, method, url, token string, body any) (int, map[string]any) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// Every exchange is checked against the OpenAPI document.
	client := &http.Client{Transport: apitest.Default(tb).Transport(tb, nil)}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// data returns the data of a successful answer.
func data(tb testing.TB, status int, body map[string]any) map[string]any {
	tb.Helper()
	d, _ := body["data"].(map[string]any)
	if status >= 300 || d == nil {
		tb.Fatalf("%d %v", status, body)
	}
	return d
}

func num(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// waitUntil polls cond; the deadline only bounds a broken run.
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within 60 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
