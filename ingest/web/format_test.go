package web

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
)

func TestMoneyUsesTheCurrencysDecimals(t *testing.T) {
	for _, tc := range []struct{ amount, cur, want string }{
		{"1234.5", "USD", "1,234.50 USD"},
		{"0", "EUR", "0.00 EUR"},
		{"-20.1", "usd", "-20.10 USD"},
		{"1500000", "VND", "1,500,000 VND"}, // no minor unit
		{"999", "USD", "999.00 USD"},
		{"123456789012.34", "USD", "123,456,789,012.34 USD"},
	} {
		if got := money(tc.amount, tc.cur); got != tc.want {
			t.Errorf("money(%s, %s) = %q, want %q", tc.amount, tc.cur, got, tc.want)
		}
	}
	if got := string(amountHTML(json.Number("12.5"), "USD")); got != `<span data-amount="12.5" data-currency="USD">12.50 USD</span>` {
		t.Errorf("amountHTML: %s", got)
	}
}

func TestCountAndTrend(t *testing.T) {
	if got := count(int64(1234567)); got != "1,234,567" {
		t.Errorf("count: %s", got)
	}
	if got := count(-1000); got != "-1,000" {
		t.Errorf("count: %s", got)
	}
	up, down := json.Number("12.5"), json.Number("-3.0")
	var none *json.Number
	for _, tc := range []struct {
		in   any
		want string
	}{{&up, "+12.5 %"}, {&down, "-3.0 %"}, {none, "new"}, {json.Number("0"), "0 %"}} {
		if got := trend(tc.in); got != tc.want {
			t.Errorf("trend(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSafeNextKeepsOnlyDashboardPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/app/programs/3":       "/app/programs/3",
		"/partner/":             "/partner/",
		"//evil.example/app/":   "",
		"https://evil.example/": "",
		"/\\evil.example":       "",
		"/api/v1/programs":      "",
		"/app/../../evil":       "",
		"/app/%2e%2e/x":         "",
		"/app/%2E%2E/x":         "",
		"/partner/./":           "",
		"/app/programs/3?x=1":   "/app/programs/3?x=1",
		"/app/x\r\nSet-Cookie:": "",
		"":                      "",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	a, b := csrfToken("pt_session_a"), csrfToken("pt_session_b")
	if a == b || a != csrfToken("pt_session_a") || len(a) < 40 {
		t.Fatalf("csrf tokens: %q %q", a, b)
	}
}

func TestFormJSONKeepsBadNumbersAsText(t *testing.T) {
	f := &form{Values: map[string]string{"name": "Acme", "commission_rate": "12.5", "hold_days": "ten", "domain": ""}}
	b, _ := io.ReadAll(f.json("commission_rate", "hold_days"))
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["name"] != "Acme" || got["commission_rate"] != 12.5 || got["hold_days"] != "ten" || len(got) != 3 {
		t.Fatalf("body: %s", b)
	}
}

func TestRefusalGoesNextToTheFieldItNames(t *testing.T) {
	f := &form{Values: map[string]string{"name": "", "commission_rate": "x"}, Errors: map[string]string{}, order: []string{"name", "commission_rate"}}
	status, shown := f.refuse(&apiclient.ResponseError{Status: 400, Message: "commission_rate must be a positive number"})
	if !shown || status != 400 || f.Errors["commission_rate"] == "" || f.Error != "" {
		t.Fatalf("refusal placed at %v / %q", f.Errors, f.Error)
	}
	g := &form{Values: map[string]string{"code": "x"}, Errors: map[string]string{}, order: []string{"code"}}
	g.refuse(&apiclient.ResponseError{Status: 409, Message: "Only a workspace owner can do that"})
	if g.Error == "" || len(g.Errors) != 0 {
		t.Fatalf("form-level refusal placed at %v / %q", g.Errors, g.Error)
	}
	if _, shown := g.refuse(&apiclient.ResponseError{Status: 500, Message: "boom"}); shown {
		t.Fatal("a 500 is not a refusal to show")
	}
}
