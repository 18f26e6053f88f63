package ingest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/ingest/linkcache"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
)

// nopRecorder takes every click at once: the benchmark measures the
// edge's own work (middleware, parsing, validation, link cache,
// enrichment, rendering), not Redis.
type nopRecorder struct{}

func (nopRecorder) RecordClick(context.Context, *ledger.Click) error { return nil }
func (nopRecorder) RecordVisit(context.Context, *ledger.Visit) error { return nil }

// clickBody330 is a click as the tracker sends it, about 330 bytes.
const clickBody330 = `{"affiliate_url":"https://shop.example.com/landing?aff=pat1&utm_source=newsletter","page_url":"https://shop.example.com/landing?aff=pat1&utm_source=newsletter","referrer_url":"https://news.example.org/","session_id":"sess_k2j3h4g5f6_1732180000000","screen_resolution":"1920x1080","language":"en-US","timezone":"Europe/Berlin"}`

func BenchmarkClickHandler(b *testing.B) {
	db := pgtest.New(b)
	db.MustFixture(b, "pat1")

	srv := newTestServer(db, &fakeClock{t: time.Now()})
	rdb := redistest.Client(b)
	srv.svc.Tracking = linkcache.New(postgres.NewTrafficStore(db.DB), rdb, "bench", linkcache.Options{TTL: time.Hour})
	srv.svc.Traffic = nopRecorder{}
	handler := srv.App().Handler()
	proxy := &net.TCPAddr{IP: net.IPv4zero, Port: 40000} // the trusted proxy of the test edge

	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI("/api/v1/track/click")
		req.Header.SetContentType("application/json")
		req.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36")
		var ctx fasthttp.RequestCtx
		var ip [4]byte
		n := uint32(time.Now().UnixNano())
		for pb.Next() {
			n++ // every request from another client: no rate limit in the way
			binary.BigEndian.PutUint32(ip[:], n)
			ctx.Init(&req, proxy, nil)
			ctx.ResetUserValues() // as the server does between requests
			ctx.Request.Header.Set("X-Forwarded-For", netip.AddrFrom4(ip).String())
			ctx.Request.SetBodyString(clickBody330)
			handler(&ctx)
			if code := ctx.Response.StatusCode(); code != 200 {
				b.Fatalf("status %d: %s", code, ctx.Response.Body())
			}
		}
	})
}

// BenchmarkClickBody renders the hot path's response into a stack
// buffer, as trackClick does.
func BenchmarkClickBody(b *testing.B) {
	codes := make([]string, 10)
	for i := range codes {
		codes[i] = "partner-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var buf [maxClickBody]byte
		if out := appendClickBody(buf[:0], "01hzzzzzzzzzzzzzzzzzzzzzzz", codes[i%10], 90); len(out) == 0 {
			b.Fatal("empty body")
		}
	}
}

// BenchmarkParseLean reads a tracker's click body: validation and the
// one pass over its members.
func BenchmarkParseLean(b *testing.B) {
	c, release := fiberCtx(clickBody330)
	defer release()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := parseLean(c); err != nil {
			b.Fatal(err)
		}
	}
}
