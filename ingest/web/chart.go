package web

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/shopspring/decimal"
)

// chart is a line chart of one or more daily series, drawn as inline SVG
// on the server: readable without JavaScript, printable, and exact (the
// values stay decimals; only pixel positions are rounded).
type chart struct {
	ID     string   // element id prefix, unique within the page
	Title  string   // read by screen readers and shown as the caption
	Labels []string // one per day, oldest first
	Series []series
}

// series is one line: its name in the legend and a value per label.
type series struct {
	Name   string
	Class  string // CSS class giving its colour (s1 … s4)
	Values []decimal.Decimal
}

// Geometry of the drawing, in viewBox units.
const (
	chartW, chartH          = 720, 220
	padLeft, padRight       = 56, 12
	padTop, padBottom       = 12, 28
	plotW                   = chartW - padLeft - padRight
	plotH                   = chartH - padTop - padBottom
	maxXLabels              = 8
	gridLines               = 4
	chartDecimals     int32 = 1
)

// SVG draws the chart: axes with the maximum and gridlines, one polyline
// and its points per series, and x labels thinned to fit.
func (c chart) SVG() template.HTML {
	max := decimal.Zero
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v.GreaterThan(max) {
				max = v
			}
		}
	}
	if max.IsZero() {
		max = decimal.NewFromInt(1)
	}
	top := niceCeiling(max)
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t">`, chartW, chartH, esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title>`, esc(c.ID), esc(c.Title))
	for i := 0; i <= gridLines; i++ {
		y := padTop + plotH - plotH*i/gridLines
		val := top.Mul(decimal.NewFromInt(int64(i))).Div(decimal.NewFromInt(gridLines))
		fmt.Fprintf(&b, `<line class="gridline" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padLeft, y, chartW-padRight, y)
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`, padLeft-6, y+4, esc(shortNumber(val)))
	}
	n := len(c.Labels)
	step := (n + maxXLabels - 1) / maxXLabels
	if step == 0 {
		step = 1
	}
	for i, l := range c.Labels {
		// Every step-th day, and the last one when it has room.
		if i%step != 0 && (i != n-1 || i%step < step/2+1) {
			continue
		}
		fmt.Fprintf(&b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>`, xPos(i, n), chartH-8, esc(l))
	}
	for _, s := range c.Series {
		pts := make([]string, len(s.Values))
		for i, v := range s.Values {
			pts[i] = xPos(i, n) + "," + yPos(v, top)
		}
		fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, esc(s.Class), strings.Join(pts, " "))
		if len(s.Values) <= 31 {
			for i, v := range s.Values {
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="2.5"/>`, esc(s.Class), xPos(i, n), yPos(v, top))
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func xPos(i, n int) string {
	if n <= 1 {
		return fmt.Sprint(padLeft + plotW/2)
	}
	return decimal.NewFromInt(int64(padLeft)).Add(decimal.NewFromInt(int64(plotW * i)).Div(decimal.NewFromInt(int64(n - 1)))).StringFixed(chartDecimals)
}

func yPos(v, top decimal.Decimal) string {
	if v.IsNegative() {
		v = decimal.Zero
	}
	h := v.Mul(decimal.NewFromInt(plotH)).Div(top)
	return decimal.NewFromInt(padTop + plotH).Sub(h).StringFixed(chartDecimals)
}

// niceCeiling rounds max up to 1, 2 or 5 times a power of ten, so the
// gridlines fall on round numbers.
func niceCeiling(max decimal.Decimal) decimal.Decimal {
	p := decimal.NewFromInt(1)
	for p.Mul(decimal.NewFromInt(10)).LessThan(max) {
		p = p.Mul(decimal.NewFromInt(10))
	}
	for p.GreaterThan(max) && p.GreaterThan(decimal.New(1, -2)) {
		p = p.Div(decimal.NewFromInt(10))
	}
	for _, m := range []int64{1, 2, 5, 10} {
		if c := p.Mul(decimal.NewFromInt(m)); !c.LessThan(max) {
			return c
		}
	}
	return p.Mul(decimal.NewFromInt(10))
}

// shortNumber writes an axis value compactly: 1500 → 1.5k, 2000000 → 2M.
func shortNumber(v decimal.Decimal) string {
	switch {
	case v.GreaterThanOrEqual(decimal.NewFromInt(1_000_000)):
		return v.Div(decimal.NewFromInt(1_000_000)).Round(1).String() + "M"
	case v.GreaterThanOrEqual(decimal.NewFromInt(1_000)):
		return v.Div(decimal.NewFromInt(1_000)).Round(1).String() + "k"
	}
	return v.Round(2).String()
}
