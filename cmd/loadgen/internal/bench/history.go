package bench

import (
	"fmt"
	"strings"
	"time"
)

// The full runs' log: docs/performance.md shows the last run in full and,
// in its "Full runs" table, one line for each full run written to it, so
// that a target met on one day and missed on another stays visible after
// the next run rewrites the file.

// historyHeading opens the log's section.
const historyHeading = "## Full runs"

// historyKeep is how many runs the log keeps, newest first.
const historyKeep = 40

// ParseHistory returns the log's rows (table lines, newest first) from a
// document written before; none when it has no log.
func ParseHistory(doc string) []string {
	_, section, ok := strings.Cut(doc, "\n"+historyHeading+"\n")
	if !ok {
		return nil
	}
	var rows []string
	header := 0
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "|---") {
			continue
		}
		if header < 2 { // the table's header and separator
			header++
			continue
		}
		rows = append(rows, line)
	}
	return rows
}

// HistoryRow is this run's line of the log: when, at which commit, how
// busy the machine was as it started, its speed against the issue's
// figures, and the verdict.
func (d Document) HistoryRow() string {
	speed := ""
	for _, f := range d.Facts {
		if f[0] == speedFact {
			speed, _, _ = strings.Cut(f[1], " the issue's figures")
		}
	}
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "/") }
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", d.Date.UTC().Format("2006-01-02 15:04 UTC"), cell(d.Commit),
		d.Took.Round(time.Second), cell(d.Start), cell(speed), Summary(d.Targets))
}

// history renders the log: this run's row, then the rows of the runs
// before, at most historyKeep.
func (d Document) history() string {
	rows := append([]string{d.HistoryRow()}, d.History...)
	rows = rows[:min(len(rows), historyKeep)]
	var b strings.Builder
	b.WriteString("\n" + historyHeading + "\n\n")
	b.WriteString("Every full run written here, newest first: the one above in full, the ones before as their verdict and the machine's speed that day.\n\n")
	b.WriteString("| run | commit | took | machine as it started | speed against the issue's figures | targets |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return b.String()
}
