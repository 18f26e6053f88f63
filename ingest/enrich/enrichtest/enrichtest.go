// Package enrichtest builds tiny MaxMind City databases for tests, with
// github.com/maxmind/mmdbwriter.
package enrichtest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/partnertrack/partnertrack/ingest/enrich"
)

// MustGeoDB writes a City database that maps each network (CIDR) to a
// location and returns its path, removed when the test ends.
func MustGeoDB(tb testing.TB, networks map[string]enrich.Location) string {
	tb.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoIP2-City", RecordSize: 24, Languages: []string{"en"}})
	if err != nil {
		tb.Fatal(err)
	}
	for cidr, loc := range networks {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			tb.Fatal(err)
		}
		rec := mmdbtype.Map{
			"country": mmdbtype.Map{"iso_code": mmdbtype.String(loc.Country)},
			"city":    mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(loc.City)}},
			"subdivisions": mmdbtype.Slice{mmdbtype.Map{
				"names": mmdbtype.Map{"en": mmdbtype.String(loc.Region)},
			}},
		}
		if err := tree.Insert(network, rec); err != nil {
			tb.Fatal(err)
		}
	}
	path := filepath.Join(tb.TempDir(), "city.mmdb")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := tree.WriteTo(f); err != nil {
		tb.Fatal(err)
	}
	return path
}
