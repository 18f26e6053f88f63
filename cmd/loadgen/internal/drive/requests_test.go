package drive

import (
	"encoding/json"
	"testing"
)

func TestClickBodyIsTheTrackersShape(t *testing.T) {
	b := ClickBody("pat1")
	if n := len(b); n < 300 || n > 360 {
		t.Fatalf("click body is %d bytes, want about 330", n)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("click body is not JSON: %v", err)
	}
	if v["affiliate_url"] != "https://shop.example.com/landing?aff=pat1&utm_source=newsletter" {
		t.Fatalf("affiliate_url = %v", v["affiliate_url"])
	}
}

func TestIPsAreDistinctWithinTheSpace(t *testing.T) {
	seen := map[string]bool{}
	for n := int64(0); n < ClientIPs; n += 7 {
		ip := IP(n)
		if seen[ip] {
			t.Fatalf("address %s repeats at %d", ip, n)
		}
		seen[ip] = true
	}
	if IP(0) != "10.0.0.0" || IP(258) != "10.0.1.2" || IP(1<<24+5) != "10.0.0.5" {
		t.Fatalf("IP(0) %s IP(258) %s IP(2^24+5) %s", IP(0), IP(258), IP(1<<24+5))
	}
}

func TestClickBodyCarriesItsSession(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(clickBody("pat1", "sess_ab_42"), &v); err != nil {
		t.Fatalf("click body is not JSON: %v", err)
	}
	if v["session_id"] != "sess_ab_42" || v["page_url"] != "https://shop.example.com/landing?aff=pat1&utm_source=newsletter" {
		t.Fatalf("session_id %v, page_url %v", v["session_id"], v["page_url"])
	}
}
