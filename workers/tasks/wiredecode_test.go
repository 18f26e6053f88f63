package tasks

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// decodeV1 reads a batch of clicks with encoding/json, the decoder the
// worker used before the JSON v2 one: the reference of TestWireDecodesAsV1.
func decodeV1(tb testing.TB, payload []byte) []ledger.Click {
	tb.Helper()
	var ws []clickWire
	if err := json.Unmarshal(payload, &ws); err != nil {
		tb.Fatalf("encoding/json: %v", err)
	}
	out := make([]ledger.Click, len(ws))
	for i := range ws {
		c, err := ws[i].click()
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = *c
	}
	return out
}

// checkDecodesAsV1 encodes clicks as the edge does and checks that the
// batch and each pending record decode as encoding/json decodes them.
func checkDecodesAsV1(tb testing.TB, clicks []*ledger.Click) {
	tb.Helper()
	wires := make([][]byte, len(clicks))
	for i, c := range clicks {
		wires[i], _ = EncodeClick(c)
		one, err := DecodeClick(wires[i])
		if err != nil {
			tb.Fatalf("DecodeClick(%s): %v", wires[i], err)
		}
		if want := decodeV1(tb, joinArray(wires[i:i+1]))[0]; !reflect.DeepEqual(*one, want) {
			tb.Fatalf("DecodeClick(%s)\n got %+v\nwant %+v", wires[i], *one, want)
		}
	}
	task := NewClickBatchTask(wires)
	got, err := DecodeClickBatch(task)
	if err != nil {
		tb.Fatalf("DecodeClickBatch(%s): %v", task.Payload(), err)
	}
	if want := decodeV1(tb, task.Payload()); !reflect.DeepEqual(got, want) {
		tb.Fatalf("DecodeClickBatch(%s)\n got %+v\nwant %+v", task.Payload(), got, want)
	}
}

// TestWireDecodesAsV1: what the edge writes decodes to the same clicks
// and visits with the JSON v2 decoder as with encoding/json, escapes,
// invalid UTF-8 (written as U+FFFD) and left-out fields included.
func TestWireDecodesAsV1(t *testing.T) {
	checkDecodesAsV1(t, []*ledger.Click{
		wireClick("plain"),
		wireClick("q\"b\\s/\n\r\t\x00\x1f\x7f <>& \u2028\u2029 é ☃ 😀"),
		wireClick("a\xffb\xc3(c\xed\xa0\x80d\xe2\x82"),
		{ID: ledger.NewClickID(time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)), ProgramID: 1},
	})

	visits := []ledger.Visit{
		{ID: ledger.NewClickID(time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)), ProgramID: 9, ClickID: "c1",
			SessionID: "s\xff\u2028", PageURL: "https://shop.example.com/?a=1&b=<2>", ReferrerURL: "r", IsTest: true},
		{ID: ledger.NewClickID(time.Date(2026, 11, 28, 3, 0, 1, 0, time.UTC)), ProgramID: 9},
	}
	wires := make([][]byte, len(visits))
	for i := range visits {
		wires[i], _ = EncodeVisit(&visits[i])
	}
	task := NewVisitBatchTask(wires)
	got, err := DecodeVisitBatch(task)
	if err != nil {
		t.Fatal(err)
	}
	var ws []visitWire
	if err := json.Unmarshal(task.Payload(), &ws); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		if got[i].ID != w.ID || got[i].ProgramID != w.ProgramID || got[i].ClickID != w.ClickID ||
			got[i].SessionID != w.SessionID || got[i].PageURL != w.PageURL || got[i].ReferrerURL != w.ReferrerURL ||
			got[i].IsTest != w.IsTest {
			t.Fatalf("visit %d: got %+v, encoding/json read %+v", i, got[i], w)
		}
	}
}

func FuzzWireDecodesAsV1(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\\n<>&\u2028", "\xff\xc3(", "😀é", `\u0000"}`} {
		f.Add(s, s+"x", int64(3), false)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int64, test bool) {
		c := wireClick(a)
		c.PageURL, c.UserAgent, c.ProgramID, c.IsTest = b, a+b, n, test
		d := wireClick(b)
		d.PartnerID, d.LinkID, d.GeoCity = nil, nil, ""
		checkDecodesAsV1(t, []*ledger.Click{c, d})
	})
}
