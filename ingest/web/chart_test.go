package web

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestNiceCeiling(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "3": "5", "7": "10", "12": "20", "180": "200", "0.3": "0.5", "999": "1000", "1001": "2000"} {
		if got := niceCeiling(decimal.RequireFromString(in)); got.String() != want {
			t.Errorf("niceCeiling(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestChartDrawsEverySeries: one polyline per series, with a point per
// day, the highest value at the top of the plot and zero at the bottom.
func TestChartDrawsEverySeries(t *testing.T) {
	c := chart{ID: "t", Title: "Clicks <per> day", Labels: []string{"1 Nov", "2 Nov", "3 Nov"}, Series: []series{
		{Name: "Clicks", Class: "s1", Values: []decimal.Decimal{decimal.Zero, decimal.NewFromInt(5), decimal.NewFromInt(10)}},
		{Name: "Leads", Class: "s2", Values: []decimal.Decimal{decimal.NewFromInt(1), decimal.NewFromInt(2), decimal.NewFromInt(3)}},
	}}
	svg := string(c.SVG())
	if strings.Count(svg, "<polyline") != 2 || strings.Count(svg, "<circle") != 6 {
		t.Fatalf("series not drawn:\n%s", svg)
	}
	// 10 is the top of the plot (y = padTop), 0 its bottom.
	if !strings.Contains(svg, `points="56.0,192.0 382.0,102.0 708.0,12.0"`) {
		t.Fatalf("clicks line:\n%s", svg)
	}
	if !strings.Contains(svg, "<title id=\"t-t\">Clicks &lt;per&gt; day</title>") || !strings.Contains(svg, `role="img"`) {
		t.Fatalf("title not escaped or missing:\n%s", svg)
	}
}
