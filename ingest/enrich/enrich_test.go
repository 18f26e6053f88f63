package enrich_test

import (
	"net/netip"
	"testing"

	"github.com/partnertrack/partnertrack/ingest/enrich"
	"github.com/partnertrack/partnertrack/ingest/enrich/enrichtest"
)

func TestParseDevice(t *testing.T) {
	d := enrich.NewDevices(2)
	for _, tc := range []struct {
		desc, agent string
		want        enrich.Device
	}{
		{"desktop chrome", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
			enrich.Device{Type: "desktop", OS: "Windows", Browser: "Chrome"}},
		{"iphone safari", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
			enrich.Device{Type: "mobile", OS: "iOS", Browser: "Safari"}},
		{"ipad", "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1",
			enrich.Device{Type: "tablet", OS: "iOS", Browser: "Safari"}},
		{"android firefox", "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
			enrich.Device{Type: "mobile", OS: "Android", Browser: "Firefox"}},
		{"googlebot", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			enrich.Device{Type: "bot", Browser: "Googlebot"}},
		{"empty", "", enrich.Device{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// Twice: parsed, then from the cache (which holds two agents,
			// so it also starts over along the way).
			for i := 0; i < 2; i++ {
				if got := d.Parse(tc.agent); got != tc.want {
					t.Fatalf("Parse = %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestGeoDBLookup(t *testing.T) {
	path := enrichtest.MustGeoDB(t, map[string]enrich.Location{
		"81.2.69.0/24": {Country: "GB", Region: "England", City: "London"},
	})
	db, err := enrich.OpenGeoDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Lookup(netip.MustParseAddr("81.2.69.142")); got != (enrich.Location{Country: "GB", Region: "England", City: "London"}) {
		t.Fatalf("known address: %+v", got)
	}
	if got := db.Lookup(netip.MustParseAddr("198.51.100.1")); got != (enrich.Location{}) {
		t.Fatalf("unknown address: %+v", got)
	}
	var none *enrich.GeoDB
	if got := none.Lookup(netip.MustParseAddr("81.2.69.142")); got != (enrich.Location{}) {
		t.Fatalf("no database: %+v", got)
	}
}

func BenchmarkDevicesParseCached(b *testing.B) {
	d := enrich.NewDevices(1000)
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	for i := 0; i < b.N; i++ {
		d.Parse(ua)
	}
}

func BenchmarkParseDeviceUncached(b *testing.B) {
	ua := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	for i := 0; i < b.N; i++ {
		enrich.ParseDevice(ua)
	}
}
