// Package axe runs the axe-core accessibility checker in a page driven by
// chromedp. axe-core is vendored from the npm registry (VENDORED.md holds
// its version and checksum); tests inject it, nothing serves it.
package axe

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

//go:embed axe.min.js
var script string

// Violation is one rule axe found broken, with where.
type Violation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, ", "))
}

// Serious runs axe on the page open in ctx and returns its serious and
// critical violations (WCAG 2.1 A and AA rules and axe's best practices).
// The script is evaluated through the DevTools protocol, so the page's
// Content-Security-Policy does not stop it.
func Serious(ctx context.Context) ([]Violation, error) {
	run := script + `;
(async () => {
  const r = await axe.run(document, {resultTypes: ["violations"]});
  return JSON.stringify(r.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    targets: v.nodes.map(n => n.target.join(" ")),
  })));
})()`
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("axe: %w", err)
	}
	var all []Violation
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		return nil, fmt.Errorf("axe: %w", err)
	}
	var out []Violation
	for _, v := range all {
		if v.Impact == "serious" || v.Impact == "critical" {
			out = append(out, v)
		}
	}
	return out, nil
}
