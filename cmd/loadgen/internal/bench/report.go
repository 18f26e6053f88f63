package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
)

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

// Document is the content of docs/performance.md.
type Document struct {
	Command string
	Date    time.Time
	Machine string
	Took    time.Duration
	Notes   []string
	Rows    []drive.Row
	Facts   [][2]string // other figures: name, value
	Targets []Target
	Commit  string   // the checkout measured (git describe), for the log of full runs
	Start   string   // the load it started under, in short
	History []string // the log's rows of the runs before (ParseHistory)
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
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, res.Mode(), drive.Rate(res.Throughput()), ratio,
			drive.Ms(res.Latency.Quantile(0.5)), drive.Ms(res.Latency.Quantile(0.9)), drive.Ms(res.Latency.Quantile(0.99)), drive.Ms(res.Latency.Max()),
			drive.Statuses(res.Status), strings.ReplaceAll(note, "|", "/"))
	}
	if len(d.Facts) > 0 {
		b.WriteString("\n## Other figures\n\n| figure | value |\n|---|---|\n")
		for _, f := range d.Facts {
			fmt.Fprintf(&b, "| %s | %s |\n", f[0], f[1])
		}
	}
	b.WriteString(d.history())
	b.WriteString(`
## What each run is

- **fiber ceiling**, **fiber+enqueue ceiling**: a bare fiber handler that parses the ~330-byte JSON click and answers a small JSON body, and the same plus one asynq enqueue per request on the shared Redis (` + "`loadgen ceiling-server`" + `, a child process). Each runs twice, (1) at the start and (2) right before the click intake; the ratios use the better run, since other work on the machine only ever lowers a figure.
- **raw sale transaction**: lock the partner row, insert a sale, insert its commission, update the balance, commit; 16 clients over lib/pq with ` + "`binary_parameters=yes`" + `, in a scratch database; (1) at the start and (2) right before the sales, the better run being the baseline.
- The other runs drive the real ` + "`edge`" + ` and ` + "`worker`" + ` built from the checkout, on a database created for the run and a Redis queue namespace of their own; the edge trusts 127.0.0.1 as a proxy and every click comes from another client address in ` + "`X-Forwarded-For`" + `. Sales and refunds are spread over enough programs that no key meets its limit of 120 a minute. Each sale is attributed to a click; refunds refund those sales in full. One worker process serves every queue (default concurrency: 16 click and visit tasks per CPU, 4 of the other queues per CPU) and runs the scheduler.
- **clicks at max** runs with the worker stopped, like the enqueue ceiling, which has no consumer; a worker starts when the load stops and the note gives the time until every accepted click was in Postgres. It runs twice, (1) right after the second ceilings and (2) after the sustained clicks, and the click intake target takes the better run, as each ceiling does (the better of two runs on one side of a ratio only would tilt it), and states its ratio to both ceilings; its row's note gives the ratio to bare fiber. **sustained clicks** run for a minute at half the fiber+enqueue ceiling (the better of its two runs; the rate is in the row's name), sent on time by a pool of twice the requests a 25 ms answer keeps in flight over the max runs' 64 connections (as a load balancer's keep-alive pool carries many visitors' clicks; a request waiting for a free connection has the wait in its latency), with the worker draining all along, and samples, every second, the accepted clicks not yet in Postgres (the backlog), reading what is in Postgres from its statistics (` + "`n_tup_ins`" + ` of the clicks partitions: counting hundreds of thousands of rows a second would take half a core from the system measured; the statistics lag by up to a second, so the backlog reads at most a second of load high, never low; the start is the larger of the statistics and a count of the rows, since an idle backend may report the phase before's inserts late); the time until every click is in Postgres is from counting the rows. ` + "`" + `make bench BENCH_ONLY=clicks` + "`" + ` runs the click phases alone: the ceilings (1) and (2), clicks at max, the sustained clicks and clicks at max again, with their rows, targets and this machine's speed; it writes nothing.
- **worker drain, rollups on / off**: the cost of the analytics rollups on the click worker (issue 25). With the worker stopped, the edge takes a backlog of clicks, each of a visitor session of its own (the worst case for unique visitors); then a fresh worker drains it, timed from its start until every click is in Postgres, with the clicks' rollup trigger enabled or disabled (` + "`ALTER TABLE clicks … TRIGGER clicks_rollup`" + `). Four rounds, off, on, on, off; the cost compares the better run of each side. With the rollups, the figure also gives how long after the drain the worker's session tally had counted the visitors (it yields to click batches waiting in the queues). ` + "`make bench BENCH_ONLY=drain`" + ` runs this alone.
- **AOF** rows: the same click intake against three private redis-servers, one without persistence, one with ` + "`appendonly yes`, `appendfsync everysec`" + ` and one with ` + "`appendfsync always`" + ` (as docker-compose.yml runs Redis: docs/ingestion.md says why), no worker draining them; two rounds alternate the three, and each cost compares the better run of each. ` + "`" + `make bench BENCH_ONLY=aof` + "`" + ` runs this phase alone.
- **clicks through a Redis kill**: an edge and a worker of their own on a private redis-server (AOF always, as docker-compose runs it); clicks at 1 k/s for 3 s, then Redis is killed (SIGKILL) for 10 s and restarted, then 3 s more. Latency over the whole run from the intended send times; every accepted click must then be in Postgres exactly once. ` + "`" + `make bench BENCH_ONLY=redis-kill` + "`" + ` runs this phase alone (it writes nothing).
- ` + "`" + `make bench BENCH_ONLY=money` + "`" + ` runs the money phases alone: the raw sale transaction (1) and (2), sales at max and at 0.3× the raw sale transaction (the better of its two runs), then, right after them rather than after the click phases, the refunds of those sales at max and at the sales' rate, with their rows, targets and this machine's speed; it writes nothing. ` + "`" + `BENCH_EDGE_BIN` + "`" + ` and ` + "`" + `BENCH_WORKER_BIN` + "`" + ` (` + "`" + `loadgen bench --edge-bin` + "`" + `, ` + "`" + `--worker-bin` + "`" + `) measure an edge and a worker built from another checkout instead of this one's, on the schema this checkout's migrations make, to compare old and new code on the same machine in the same hour.
- **listing**: the dashboard's tracking-event listing of a program whose clicks were bulk-loaded into Postgres, four queries in turn at a fixed rate; then the **performance** endpoint's three queries on the same program's rollups, and the dashboard's **page** rows: the program's overview and partners pages as a signed-in browser reads them (session cookie; each page calls the API in process), spread over 40 sessions of the owner so that no session meets the API's per-token limits. Each of the three reads first runs each of its queries on one connection, back to back, for a second, and all its queries then run at half the slowest one's rate (pages at most 15 a second, for the per-token limits): the probe took at most the whole machine, so half its rate keeps the reads under half load on any machine, however busy; the rates are under **Other figures**, and each row's note gives the share of the machine's CPU that was busy while it ran (other work on the host included). ` + "`" + `make bench BENCH_ONLY=listing` + "`" + ` runs these alone.
- Before each measured phase after the first, the bench waits until the worker has no task pending or running (the notifications, processor events and clicks the phases before left it), up to two minutes, so that a phase measures its own work rather than the backlog of the one before on the same cores; a wait of a second or more is listed under the notes. Then it runs a Postgres ` + "`CHECKPOINT`" + `, and so before each raw sale transaction too: otherwise the WAL of the click phases forces one (max_wal_size) that spreads its writes over whichever phase comes next, and the phases compared would not start alike.
- Peak RSS is VmHWM from /proc of the edge and the worker.
- The load generator is a Go fasthttp client on the same cores; measured back to back against the bare ceiling on this machine (2026-11-21), it reached 57 k req/s where wrk (2 threads, 64 connections) reached 65 k, so ceilings read about 10 % below what wrk would report, and so do the runs measured against them.
`)
	fmt.Fprintf(&b, "\nEvery fixed-rate phase runs at a share of a ceiling measured in the same run (sustained clicks at %.1f× the fiber+enqueue ceiling, "+
		"sales and refunds at %.1f× the raw sale transaction, the dashboard reads at %.1f× their own rate on one connection; only the Redis kill's "+
		"clicks, a steady %s, are absolute), so a target asks a machine at half the speed for the same share of its cores as a fast one. "+
		"Every fixed-rate target allows at most %g %% of its requests late and bounds the p99, and every request must be sent and answered 2xx: "+
		"a run where most requests were late fails whatever its p99. The figures are in one table, `cmd/loadgen/internal/bench/targets.go`; "+
		"docs/decisions.md, \"Machine-relative bench targets\", gives the reasons.\n",
		targets.sustainedShare, targets.moneyShare, targets.readShare, drive.Rate(outageRate), 100*maxLate)
	b.WriteString("\nLatency is measured from the intended send time in the fixed-rate runs (no coordinated omission: a request the pool could only start late is charged the wait and counted as late) and from the send in the max runs.\n")
	return b.String()
}
