package tasks

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// marshalWire is the click's wire form as encoding/json writes it, which
// EncodeClick wrote before it was written by hand.
func marshalWire(tb testing.TB, c *ledger.Click) []byte {
	tb.Helper()
	b, err := json.Marshal(clickWire{
		ID: c.ID, ProgramID: c.ProgramID, PartnerID: c.PartnerID, LinkID: c.LinkID, IsTest: c.IsTest,
		SessionID: c.SessionID, PageURL: c.PageURL, ReferrerURL: c.ReferrerURL,
		GeoCountry: c.GeoCountry, GeoRegion: c.GeoRegion, GeoCity: c.GeoCity,
		DeviceType: c.DeviceType, DeviceOS: c.DeviceOS, BrowserName: c.BrowserName,
		IP: c.IP, UserAgent: c.UserAgent,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func wireClick(text string) *ledger.Click {
	partner, link := int64(7), int64(-3)
	id := ledger.NewClickID(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	return &ledger.Click{ID: id, ProgramID: 42, PartnerID: &partner, LinkID: &link, IsTest: true,
		SessionID: text, PageURL: "https://shop.example.com/p?aff=a&b=<c>", ReferrerURL: text, GeoCountry: "DE",
		GeoRegion: text, GeoCity: "Zürich", DeviceType: "mobile", DeviceOS: "iOS", BrowserName: "Safari",
		IP: "2001:db8::1", UserAgent: text}
}

func TestClickWireMatchesMarshal(t *testing.T) {
	for _, tc := range []struct {
		desc string
		c    *ledger.Click
	}{
		{desc: "every field", c: wireClick("plain")},
		{desc: "escapes", c: wireClick("q\"b\\s/\n\r\t\x00\x1f\x7f <>& \u2028\u2029 é ☃ 😀")},
		{desc: "invalid UTF-8", c: wireClick("a\xffb\xc3(c\xed\xa0\x80d\xe2\x82")},
		{desc: "optional fields empty", c: &ledger.Click{ID: "01jdxyzabcdefghjkmnpqrstvw", ProgramID: 1}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, _ := EncodeClick(tc.c)
			if want := marshalWire(t, tc.c); !bytes.Equal(got, want) {
				t.Fatalf("wire form\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzClickWireMatchesMarshal(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\\n<>&\u2028", "\xff\xc3(", "😀é"} {
		f.Add(s, s+"x", int64(3), false)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int64, test bool) {
		c := wireClick(a)
		c.PageURL, c.UserAgent, c.ProgramID, c.IsTest = b, a+b, n, test
		got, _ := EncodeClick(c)
		if want := marshalWire(t, c); !bytes.Equal(got, want) {
			t.Fatalf("wire form\n got %q\nwant %q", got, want)
		}
	})
}

// BenchmarkEncodeClick encodes a click as the edge takes it, once per
// request.
func BenchmarkEncodeClick(b *testing.B) {
	c := wireClick("sess_k2j3h4g5f6_1732180000000")
	c.UserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	b.ReportAllocs()
	for b.Loop() {
		EncodeClick(c)
	}
}

// BenchmarkDecodeClickBatch decodes a batch of 32 clicks (the edge's
// FlushEnough) as the click worker takes it, once per task.
func BenchmarkDecodeClickBatch(b *testing.B) {
	t := NewClickBatchTask(benchBatch(b, 32))
	b.SetBytes(int64(len(t.Payload())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeClickBatch(t); err != nil {
			b.Fatal(err)
		}
	}
}

// benchBatch is n encoded clicks as a browser on a landing page sends
// them.
func benchBatch(tb testing.TB, n int) [][]byte {
	tb.Helper()
	out := make([][]byte, n)
	for i := range out {
		c := wireClick("sess_k2j3h4g5f6_1732180000000")
		c.ID = ledger.NewClickID(time.Date(2026, 11, 27, 8, 0, i, 0, time.UTC))
		c.ReferrerURL = "https://news.example.org/article/12345?utm_source=feed"
		c.GeoRegion = "ZH"
		c.UserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
		out[i], _ = EncodeClick(c)
	}
	return out
}
