package ceiling

import (
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

func TestBareCeilingParsesAndAnswers(t *testing.T) {
	s, err := Start(Options{Mode: Bare, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := drive.NewClient(s.Addr(), 1)
	var out []byte
	status, err := c.Do(&drive.Request{Method: "POST", Path: "/api/v1/track/click",
		Body: []byte(`{"affiliate_url":"https://shop.example/?aff=x"}`)}, &out)
	if err != nil || status != 200 || !strings.Contains(string(out), `"click_id":"clk_1"`) {
		t.Fatalf("status %d, body %s, err %v", status, out, err)
	}
	out = out[:0]
	status, _ = c.Do(&drive.Request{Method: "POST", Path: "/api/v1/track/click", Body: []byte(`{}`)}, &out)
	if status != 400 {
		t.Fatalf("a click without affiliate_url answered %d %s", status, out)
	}
	if _, err := Start(Options{Mode: "other"}); err == nil {
		t.Fatal("an unknown mode started")
	}
}
