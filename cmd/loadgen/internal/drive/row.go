// Package report formats what a load run or the bench measured: one line
// per run (throughput, ratio to its ceiling, percentiles, statuses), one
// line per target ("name: measured (target) ok|short"), the final
// "N passed, M failed", and the Markdown of docs/performance.md.
package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/load"
)

// Row is one measured run.
type Row struct {
	Name    string
	Result  *load.Result
	Ceiling string  // the name of the ceiling it is a ratio to ("" for none)
	Base    float64 // that ceiling's throughput
	Note    string  // anything else measured with it
}

// Ratio is the row's throughput over its ceiling's (0 without one).
func (r Row) Ratio() float64 {
	if r.Base <= 0 || r.Result == nil {
		return 0
	}
	return r.Result.Throughput() / r.Base
}

// Target is one figure the issue asks for.
type Target struct {
	Name     string
	Measured string
	Want     string
	OK       bool
}

// Line is the target's line: "name: measured (want) ok|short".
func (t Target) Line() string {
	verdict := "short"
	if t.OK {
		verdict = "ok"
	}
	return fmt.Sprintf("%s: %s (%s) %s", t.Name, t.Measured, t.Want, verdict)
}

// Summary is the last line: "N passed, M failed".
func Summary(ts []Target) string {
	passed := 0
	for _, t := range ts {
		if t.OK {
			passed++
		}
	}
	return fmt.Sprintf("%d passed, %d failed", passed, len(ts)-passed)
}

// Ms formats a duration in milliseconds with two significant decimals.
func Ms(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

// Rate formats a throughput.
func Rate(perSec float64) string {
	if perSec >= 10000 {
		return strconv.FormatFloat(perSec/1000, 'f', 1, 64) + " k/s"
	}
	return strconv.FormatFloat(perSec, 'f', 0, 64) + "/s"
}

// Statuses formats status counts, most frequent first ("200×1000 429×3";
// transport errors as "err").
func Statuses(m map[int]int64) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		if m[codes[i]] != m[codes[j]] {
			return m[codes[i]] > m[codes[j]]
		}
		return codes[i] < codes[j]
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "err"
		}
		parts[i] = name + "×" + strconv.FormatInt(m[c], 10)
	}
	return strings.Join(parts, " ")
}

// mode describes how a run was driven.
func mode(r *load.Result) string {
	if r.Rate > 0 {
		return fmt.Sprintf("%s fixed, pool %d", Rate(r.Rate), r.Workers)
	}
	return fmt.Sprintf("max, %d conns", r.Workers)
}

// Line is the row as one line of text.
func (r Row) Line() string {
	res := r.Result
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %10s", r.Name, Rate(res.Throughput()))
	if r.Ceiling != "" {
		fmt.Fprintf(&b, " (%.2f× %s)", r.Ratio(), r.Ceiling)
	}
	fmt.Fprintf(&b, "  p50 %s p90 %s p99 %s max %s  [%s]  %s", Ms(res.Latency.Quantile(0.5)), Ms(res.Latency.Quantile(0.9)),
		Ms(res.Latency.Quantile(0.99)), Ms(res.Latency.Max()), mode(res), Statuses(res.Status))
	if res.Late > 0 || res.Unsent > 0 {
		fmt.Fprintf(&b, "  late %d unsent %d", res.Late, res.Unsent)
	}
	if res.FirstErr != "" {
		fmt.Fprintf(&b, "  first error: %s", res.FirstErr)
	}
	if r.Note != "" {
		b.WriteString("  " + r.Note)
	}
	return b.String()
}

// Document is the content of docs/performance.md.
type Document struct {
	Command string
	Date    time.Time
	Machine string
	Took    time.Duration
	Notes   []string
	Rows    []Row
	Facts   [][2]string // other figures: name, value
	Targets []Target
}

// Markdown renders the document.
func (d Document) Markdown() string {
	var b strings.Builder
	b.WriteString("# Performance\n\n")
	b.WriteString("Written by `make bench` (`cmd/loadgen bench`); do not edit by hand. The last run:\n\n")
	fmt.Fprintf(&b, "    %s\n\n", d.Command)
	fmt.Fprintf(&b, "on %s, %s, in %s. Every ratio is to a ceiling measured in the same run, on the same machine, with Postgres, Redis, the service and the load generator sharing its cores.\n\n",
		d.Machine, d.Date.UTC().Format("2006-01-02 15:04 UTC"), d.Took.Round(time.Second))
	for _, n := range d.Notes {
		b.WriteString("- " + n + "\n")
	}
	if len(d.Notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("## Targets\n\n| target | measured | wanted | |\n|---|---|---|---|\n")
	for _, t := range d.Targets {
		v := "short"
		if t.OK {
			v = "ok"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Measured, t.Want, v)
	}
	fmt.Fprintf(&b, "\n%s.\n\n", Summary(d.Targets))
	b.WriteString("## Runs\n\n| run | load | throughput | ratio | p50 | p90 | p99 | max | answers | notes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range d.Rows {
		res := r.Result
		ratio := ""
		if r.Ceiling != "" {
			ratio = fmt.Sprintf("%.2f× %s", r.Ratio(), r.Ceiling)
		}
		note := r.Note
		if res.Late > 0 || res.Unsent > 0 {
			late := fmt.Sprintf("late %d, unsent %d", res.Late, res.Unsent)
			if note != "" {
				late += "; " + note
			}
			note = late
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, mode(res), Rate(res.Throughput()), ratio,
			Ms(res.Latency.Quantile(0.5)), Ms(res.Latency.Quantile(0.9)), Ms(res.Latency.Quantile(0.99)), Ms(res.Latency.Max()),
			Statuses(res.Status), strings.ReplaceAll(note, "|", "/"))
	}
	if len(d.Facts) > 0 {
		b.WriteString("\n## Other figures\n\n| figure | value |\n|---|---|\n")
		for _, f := range d.Facts {
			fmt.Fprintf(&b, "| %s | %s |\n", f[0], f[1])
		}
	}
	b.WriteString(`
## What each run is

- **fiber ceiling**, **fiber+enqueue ceiling**: a bare fiber handler that parses the ~330-byte JSON click and answers a small JSON body, and the same plus one asynq enqueue per request on the shared Redis (` + "`loadgen ceiling-server`" + `, a child process). Each runs twice, (1) at the start and (2) right before the click intake; the ratios use the better run, since other work on the machine only ever lowers a figure.
- **raw sale transaction**: lock the partner row, insert a sale, insert its commission, update the balance, commit; 16 clients over lib/pq with ` + "`binary_parameters=yes`" + `, in a scratch database; (1) at the start and (2) right before the sales, the better run being the baseline.
- The other runs drive the real ` + "`edge`" + ` and ` + "`worker`" + ` built from the checkout, on a database created for the run and a Redis queue namespace of their own; the edge trusts 127.0.0.1 as a proxy and every click comes from another client address in ` + "`X-Forwarded-For`" + `. Sales and refunds are spread over enough programs that no key meets its limit of 120 a minute. Each sale is attributed to a click; refunds refund those sales in full. One worker process serves every queue (default concurrency: 16 click and visit tasks per CPU, 4 of the other queues per CPU) and runs the scheduler.
- **clicks at max** runs with the worker stopped, like the enqueue ceiling, which has no consumer; a worker starts when the load stops and the note gives the time until every accepted click was in Postgres. It runs twice, (1) right after the second ceilings and (2) after the sustained clicks, and the click intake target takes the better run, as each ceiling does (the better of two runs on one side of a ratio only would tilt it). **clicks at 10 k/s** runs with the worker draining all along and samples, every second, the accepted clicks not yet in Postgres (the backlog), reading what is in Postgres from its statistics (` + "`n_tup_ins`" + ` of the clicks partitions: counting 600 k rows a second would take half a core from the system measured; the statistics lag by up to a second, so the backlog reads at most a second of load high, never low); the time until every click is in Postgres is from counting the rows.
- **AOF** rows: the same click intake against two private redis-servers, one without persistence and one with ` + "`appendonly yes`, `appendfsync everysec`" + `, no worker draining them; two rounds alternate the two, and the cost compares the better run of each.
- **clicks through a Redis kill**: an edge and a worker of their own on a private redis-server (AOF everysec, as docker-compose runs it); clicks at 1 k/s for 3 s, then Redis is killed (SIGKILL) for 10 s and restarted, then 3 s more. Latency over the whole run from the intended send times; every accepted click must then be in Postgres exactly once. ` + "`" + `make bench BENCH_ONLY=redis-kill` + "`" + ` runs this phase alone (it writes nothing).
- **listing**: the dashboard's tracking-event listing of a program whose clicks were bulk-loaded into Postgres, four queries in turn at a fixed rate.
- Before each measured phase after the first, the bench waits until the worker has no task pending or running (the notifications, processor events and clicks the phases before left it), up to two minutes, so that a phase measures its own work rather than the backlog of the one before on the same cores; a wait of a second or more is listed under the notes. Then it runs a Postgres ` + "`CHECKPOINT`" + `, and so before each raw sale transaction too: otherwise the WAL of the click phases forces one (max_wal_size) that spreads its writes over whichever phase comes next, and the phases compared would not start alike.
- Peak RSS is VmHWM from /proc of the edge and the worker.
- The load generator is a Go fasthttp client on the same cores; measured back to back against the bare ceiling on this machine (2026-11-21), it reached 57 k req/s where wrk (2 threads, 64 connections) reached 65 k, so ceilings read about 10 % below what wrk would report, and so do the runs measured against them.
`)
	b.WriteString("\nLatency is measured from the intended send time in the fixed-rate runs (no coordinated omission: a request the pool could only start late is charged the wait and counted as late) and from the send in the max runs.\n")
	return b.String()
}
