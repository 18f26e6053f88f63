// Package enrich derives what a click's request says about its visitor:
// device type, operating system and browser from the User-Agent (parsed by
// github.com/mileusna/useragent, results kept in a bounded cache because a
// busy edge sees the same few hundred agents over and over), and country,
// region and city from an optional MaxMind City database (read by
// github.com/oschwald/geoip2-golang/v2). Geo from CDN headers is read by the
// edge, which knows which proxies to believe.
package enrich

import (
	"net/netip"
	"strings"
	"sync"

	"github.com/mileusna/useragent"
	"github.com/oschwald/geoip2-golang/v2"
)

// Device types stored on clicks.
const (
	DeviceDesktop = "desktop"
	DeviceMobile  = "mobile"
	DeviceTablet  = "tablet"
	DeviceBot     = "bot"
)

// Device is what a User-Agent says about the visitor's device.
type Device struct {
	Type    string // desktop, mobile, tablet, bot, or "" when unknown
	OS      string // e.g. Windows, macOS, iOS, Android, Linux
	Browser string // e.g. Chrome, Firefox, Safari, Edge
}

// maxAgentLength bounds the agents parsed: longer strings are cut (no
// real browser sends one this long).
const maxAgentLength = 512

// Devices parses User-Agents through a bounded cache; it is safe for
// concurrent use.
type Devices struct {
	max int
	mu  sync.RWMutex
	m   map[string]Device
}

// NewDevices returns a parser that remembers up to max agents (past that
// the cache starts over).
func NewDevices(max int) *Devices {
	return &Devices{max: max, m: make(map[string]Device, min(max, 1024))}
}

// Parse returns the device of a User-Agent.
func (d *Devices) Parse(agent string) Device {
	if agent == "" {
		return Device{}
	}
	if len(agent) > maxAgentLength {
		agent = agent[:maxAgentLength]
	}
	d.mu.RLock()
	dev, ok := d.m[agent]
	d.mu.RUnlock()
	if ok {
		return dev
	}
	dev = ParseDevice(agent)
	d.mu.Lock()
	if len(d.m) >= d.max {
		clear(d.m)
	}
	d.m[strings.Clone(agent)] = dev // the caller's string may live in a reused buffer
	d.mu.Unlock()
	return dev
}

// ParseDevice parses one User-Agent without caching.
func ParseDevice(agent string) Device {
	ua := useragent.Parse(agent)
	dev := Device{OS: ua.OS, Browser: ua.Name}
	switch {
	case ua.Bot:
		dev.Type = DeviceBot
	case ua.Tablet:
		dev.Type = DeviceTablet
	case ua.Mobile:
		dev.Type = DeviceMobile
	case ua.Desktop:
		dev.Type = DeviceDesktop
	}
	return dev
}

// Location is where an address is, as far as the database knows.
type Location struct {
	Country string // ISO 3166-1 alpha-2
	Region  string // the largest subdivision's English name, else its ISO code
	City    string // English name
}

// GeoDB looks addresses up in a MaxMind City (or GeoLite2 City) database.
type GeoDB struct {
	r *geoip2.Reader
}

// OpenGeoDB opens the database file at path.
func OpenGeoDB(path string) (*GeoDB, error) {
	r, err := geoip2.Open(path)
	if err != nil {
		return nil, err
	}
	return &GeoDB{r: r}, nil
}

// Lookup returns the location of addr; an address the database does not
// know, or a lookup error, gives an empty location.
func (g *GeoDB) Lookup(addr netip.Addr) Location {
	if g == nil || !addr.IsValid() {
		return Location{}
	}
	rec, err := g.r.City(addr)
	if err != nil || rec == nil {
		return Location{}
	}
	loc := Location{Country: rec.Country.ISOCode, City: rec.City.Names.English}
	if len(rec.Subdivisions) > 0 {
		loc.Region = rec.Subdivisions[0].Names.English
		if loc.Region == "" {
			loc.Region = rec.Subdivisions[0].ISOCode
		}
	}
	return loc
}

// Close releases the database.
func (g *GeoDB) Close() error {
	if g == nil {
		return nil
	}
	return g.r.Close()
}
