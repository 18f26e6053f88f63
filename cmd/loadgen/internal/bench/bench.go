// Package bench is `make bench`: it measures the HTTP ceilings and the raw
// sale transaction, then the real edge and worker binaries built from this
// checkout (clicks, sales, refunds, leads, Stripe events, the listing on
// millions of clicks, the cost of Redis AOF, peak memory), prints every
// figure with its ratio to its ceiling from the same run, one line per
// target and "N passed, M failed", and writes docs/performance.md.
//
// It runs on the shared Postgres and Redis without touching anything
// else on them: databases of its own (dropped at the end), a queue
// namespace of its own on Redis (deleted at the end), and private
// redis-servers for the AOF comparison.
package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/lib/pq" // the Postgres driver

	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/ceiling"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/drive"
	"github.com/partnertrack/partnertrack/cmd/loadgen/internal/stack"
)

// Config is what the bench runs against.
type Config struct {
	Repo     string // the module to build the binaries from
	AdminURL string // a DSN of the Postgres server (any database on it)
	RedisURL string // the shared Redis
	Quick    bool   // short phases: a smoke check, not a measurement
	Command  string // recorded in docs/performance.md
	Self     string // this loadgen binary (it serves the ceilings)
	Conns    int    // connections of the max runs (64)
	// EdgeBin and WorkerBin, when set, are measured instead of the edge
	// and worker built from Repo (binaries built from another checkout,
	// to compare old and new code on the same machine in the same hour).
	// The database is still migrated by Repo's partnerctl.
	EdgeBin, WorkerBin string
	// Only, when set, runs some phases alone (see Phases) after building
	// the binaries and creating the database: a measurement of a few rows
	// without the whole bench.
	Only string
	// SalesMax, when above 0, stops the sales-at-max phase after that
	// many sales, so that two builds compared with --only money leave the
	// same number of rows before their refund phases.
	SalesMax int64
	Out      io.Writer
}

// alone is a selection of phases Config.Only can run without the rest.
type alone struct {
	raw      bool // measure the raw sale transaction first, as the bench does
	ceilings bool // measure the HTTP ceilings first (the machine's speed line)
	run      func(*bench, context.Context) error
}

// Phases are the selections Config.Only can run alone: redis-kill (the
// clicks through a Redis kill), money (the raw sale transaction, then
// sales and refunds at max and at the fixed rate), clicks (the HTTP
// ceilings, then click intake at max twice around the sustained clicks),
// listing (the event listing and the performance endpoint on the loaded
// clicks), aof (the HTTP ceilings, then click intake on Redis without
// persistence, AOF everysec and AOF always), drain (the click worker's
// drain rate with and without the rollup trigger) and redis-scale (click
// intake on a Redis Cluster and with REDIS_WAIT_REPLICAS, after the HTTP
// ceilings).
var Phases = map[string]alone{
	"clicks":      {ceilings: true, run: (*bench).clicksAlone},
	"redis-scale": {ceilings: true, run: (*bench).redisScale},
	"redis-kill":  {run: (*bench).redisKill},
	"money":       {raw: true, run: (*bench).money},
	"listing":     {run: (*bench).listingAlone},
	"drain":       {run: (*bench).drainAlone},
	"aof":         {ceilings: true, run: (*bench).aofAlone},
}

// bench is one run.
type bench struct {
	cfg     Config
	p       plan
	tag, ns string
	tmp     string
	bins    map[string]string
	dbName  string
	dbURL   string
	db      *sql.DB
	secret  string
	opToken string
	procs   []*stack.Process
	rows    []drive.Row
	facts   [][2]string
	targets []Target
	notes   []string
	ceil    map[string]float64 // the best run of each ceiling so far
	first   map[string]float64 // the first run of each ceiling

	cpu *stack.CPUSampler // the machine's CPU times, for the share the hypervisor took

	ceilingRound, rawRound int
	clickRuns              []*drive.Result // the click intake runs so far
	clickTarget            int             // where the click intake's target goes in targets
	moneyRate              float64         // the sales' and refunds' fixed rate
}

// Run runs the bench and returns the document it measured; an error
// means the run itself broke (a target missed is not an error).
func Run(ctx context.Context, cfg Config) (doc Document, err error) {
	start := time.Now()
	if cfg.Conns <= 0 {
		cfg.Conns = 64
	}
	if _, ok := Phases[cfg.Only]; cfg.Only != "" && !ok {
		return doc, fmt.Errorf("no phase %q to run alone (--only)", cfg.Only)
	}
	b := &bench{cfg: cfg, p: planFor(cfg.Quick), ceil: map[string]float64{}, first: map[string]float64{}}
	b.tag = strconv.FormatInt(time.Now().Unix()%1e8, 36) + randHex(2)
	b.ns = "bench" + b.tag + ":"
	b.secret = "whsec_bench" + randHex(16)
	b.opToken = "op_bench_" + randHex(16)
	if b.tmp, err = os.MkdirTemp("", "loadgen-bench-"); err != nil {
		return doc, err
	}
	defer func() {
		if cerr := b.cleanup(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	b.cpu = stack.SampleCPU(sampling, 250*time.Millisecond)
	// The load the bench started under, in its first line and its first
	// note: a busy machine lowers every figure, and the bench says so
	// rather than repeating anything.
	commit := b.commit() // before the run, which takes minutes: the checkout measured
	avg, known := loadAverage()
	busy, busyKnown := startBusy(ctx)
	loadLine := loadStatement(avg, known, busy, busyKnown)
	b.say("%s", loadLine)
	b.note("%s", loadLine)
	switch {
	case cfg.Quick && cfg.Only != "":
		b.note("BENCH_QUICK: short phases; a smoke check of the bench, not a measurement.")
	case cfg.Quick:
		b.note("BENCH_QUICK: short phases and %d listing clicks; a smoke check of the bench, not a measurement.", b.p.listingClicks)
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"build", b.build},
		{"ceilings", b.ceilings},
		{"raw sale transaction", b.rawBaseline},
		{"service", b.service},
	}
	if only, ok := Phases[cfg.Only]; ok {
		// The ceilings and the raw sale transaction only when the phase
		// asks: its targets are absolute or ratios to those.
		kept := steps[:1:1] // a new array on append: steps is read meanwhile
		if only.ceilings {
			kept = append(kept, steps[1])
		}
		if only.raw {
			kept = append(kept, steps[2])
		}
		steps = append(kept, steps[3])
	}
	for _, s := range steps {
		b.say("== %s", s.name)
		if err := s.fn(ctx); err != nil {
			return doc, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if b.cfg.Only != "" {
		b.say("== %s alone", b.cfg.Only)
		if err := Phases[b.cfg.Only].run(b, ctx); err != nil {
			return doc, fmt.Errorf("%s: %w", b.cfg.Only, err)
		}
	} else if err := b.measureService(ctx); err != nil {
		return doc, err
	}
	if len(b.ceil) > 0 {
		b.fact(speedFact, machineSpeed(b.ceil))
	}
	if spent, ok := b.cpu.Total(); ok {
		b.fact("CPU taken by the hypervisor", stolen(spent.StealShare()))
	}
	b.say("")
	if cfg.Only != "" { // nothing is written: the notes go with the lines
		for _, n := range b.notes {
			b.say("note: %s", n)
		}
		b.say("")
	}
	for _, t := range b.targets {
		fmt.Fprintln(cfg.Out, t.Line())
	}
	fmt.Fprintln(cfg.Out, Summary(b.targets))
	return Document{Command: cfg.Command, Date: start, Machine: machine(), Took: time.Since(start),
		Notes: b.notes, Rows: b.rows, Facts: b.facts, Targets: b.targets, Commit: commit, Start: startShort(avg, known, busy, busyKnown)}, nil
}

func (b *bench) say(format string, args ...any) { fmt.Fprintf(b.cfg.Out, format+"\n", args...) }

func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

func (b *bench) fact(name, value string) {
	b.facts = append(b.facts, [2]string{name, value})
	b.say("%-28s %s", name, value)
}

// row records a measured row; when the hypervisor took a noticeable
// share of the CPU while it ran (steal time), its note says so.
func (b *bench) row(r drive.Row) {
	if r.Result != nil && !r.Result.Started.IsZero() {
		spent, ok := b.cpu.Between(r.Result.Started, r.Result.Started.Add(r.Result.Elapsed))
		if share := spent.StealShare(); ok && share >= noticeableSteal {
			r.Note = strings.TrimPrefix(r.Note+"; "+stolen(share), "; ")
		}
	}
	b.rows = append(b.rows, r)
	b.say("%s", r.Line())
}

func (b *bench) target(name, measured, want string, ok bool) {
	b.targets = append(b.targets, Target{Name: name, Measured: measured, Want: want, OK: ok})
}

// build builds partnerctl, and the edge and the worker unless given,
// from the checkout.
func (b *bench) build(ctx context.Context) error {
	given := map[string]string{"edge": b.cfg.EdgeBin, "worker": b.cfg.WorkerBin}
	pkgs := []string{"./cmd/partnerctl"}
	for _, name := range []string{"edge", "worker"} {
		if given[name] == "" {
			pkgs = append(pkgs, "./cmd/"+name)
		}
	}
	bins, err := stack.Build(b.cfg.Repo, filepath.Join(b.tmp, "bin"), pkgs...)
	if err != nil {
		return err
	}
	for name, path := range given {
		if path == "" {
			continue
		}
		if path, err = filepath.Abs(path); err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("the %s binary to measure: %w", name, err)
		}
		bins[name] = path
		b.say("%s: %s (not built from this checkout)", name, path)
		b.note("The %s measured is %s, not built from this checkout; the database was migrated by this checkout's partnerctl.", name, path)
	}
	b.bins = bins
	return nil
}

// ceilings measures the bare fiber handler and the one that enqueues,
// each in a child process, at max with the bench's connections. It runs
// twice, at the start and right before the click intake; each ceiling is
// the better of its two runs (other work on the machine only ever lowers
// a figure, so the better one is the conservative ceiling).
func (b *bench) ceilings(ctx context.Context) error {
	b.ceilingRound++
	queue := b.ns + "ceiling"
	for _, mode := range []ceiling.Mode{ceiling.Bare, ceiling.Enqueue} {
		args := []string{"ceiling-server", "--mode", string(mode), "--listen", "127.0.0.1:0"}
		if mode == ceiling.Enqueue {
			args = append(args, "--redis-url", b.cfg.RedisURL, "--queue", queue)
		}
		p, err := stack.Start("ceiling-"+string(mode), b.cfg.Self, args, nil, b.tmp)
		if err != nil {
			return err
		}
		b.procs = append(b.procs, p)
		line, err := p.WaitLog("ceiling listening", 30*time.Second)
		if err != nil {
			return err
		}
		addr, _ := line["addr"].(string)
		c := drive.NewClient(addr, b.cfg.Conns)
		body := drive.ClickBody("pat1")
		res := drive.Run(ctx, drive.Options{Workers: b.cfg.Conns, Duration: b.p.ceiling}, func(ctx context.Context, w int, i int64) (int, error) {
			return c.Do(&drive.Request{Method: "POST", Path: "/api/v1/track/click", Body: body}, nil)
		})
		p.Stop()
		name := fmt.Sprintf("fiber ceiling (%d)", b.ceilingRound)
		if mode == ceiling.Enqueue {
			name = fmt.Sprintf("fiber+enqueue ceiling (%d)", b.ceilingRound)
			if err := ceiling.DeleteQueue(b.cfg.RedisURL, queue); err != nil {
				return fmt.Errorf("delete the ceiling queue: %w", err)
			}
		}
		if res.Success() == 0 {
			return fmt.Errorf("%s answered nothing: %s %s", name, drive.Statuses(res.Status), res.FirstErr)
		}
		label := "the bare fiber ceiling"
		if mode == ceiling.Enqueue {
			label = "the fiber+enqueue ceiling"
		}
		b.recordCeiling(string(mode), label, res.Throughput())
		b.row(drive.Row{Name: name, Result: res})
	}
	return nil
}

// rawBaseline runs the raw sale-shaped transaction in a scratch database.
// Like the ceilings it runs twice (at the start and right before the
// sales) and the better run is the baseline.
func (b *bench) rawBaseline(ctx context.Context) error {
	b.rawRound++
	name := fmt.Sprintf("pt_bench_raw_%s_%d", b.tag, b.rawRound)
	dsn, err := stack.CreateDB(b.cfg.AdminURL, name)
	if err != nil {
		return err
	}
	defer stack.DropDB(b.cfg.AdminURL, name)
	b.checkpoint(ctx, fmt.Sprintf("raw sale transaction (%d)", b.rawRound))
	res, err := ceiling.RawTx(ctx, ceiling.RawOptions{DSN: dsn, Clients: 16, Partners: 1000, Duration: b.p.raw})
	if err != nil {
		return err
	}
	if res.Success() == 0 {
		return fmt.Errorf("no raw sale transaction committed: %s", res.FirstErr)
	}
	b.recordCeiling("raw", "the raw sale transaction", res.Throughput())
	b.row(drive.Row{Name: fmt.Sprintf("raw sale transaction (%d)", b.rawRound), Result: res, Note: "16 clients, lib/pq binary_parameters=yes"})
	return nil
}

// ceilingDrift is how far apart the two runs of one ceiling may be before
// the bench says the machine's speed changed during the run.
const ceilingDrift = 0.2

// recordCeiling keeps the better run of a ceiling and notes when its two
// runs differ by more than ceilingDrift: the machine (a shared host) ran
// at another speed between them, and a ratio to the better one compares
// runs made at different speeds.
func (b *bench) recordCeiling(key, name string, throughput float64) {
	b.ceil[key] = max(b.ceil[key], throughput)
	first, seen := b.first[key]
	if !seen {
		b.first[key] = throughput
		return
	}
	if lo, hi := min(first, throughput), max(first, throughput); hi > 0 && (hi-lo)/hi > ceilingDrift {
		b.note("%s read %s in one run and %s in the other: the machine's speed changed during the bench (other work on the host), so ratios to it are unreliable in this run",
			name, drive.Rate(first), drive.Rate(throughput))
	}
}

// service creates the bench database and starts the edge and a worker.
func (b *bench) service(ctx context.Context) error {
	b.dbName = "pt_bench_" + b.tag
	var err error
	if b.dbURL, err = stack.CreateDB(b.cfg.AdminURL, b.dbName); err != nil {
		return err
	}
	mig, err := stack.Start("migrate", b.bins["partnerctl"], []string{"migrate"}, map[string]string{"DATABASE_URL": b.dbURL}, b.tmp)
	if err != nil {
		return err
	}
	if err := mig.Wait(120 * time.Second); err != nil {
		return err
	}
	if b.db, err = sql.Open("postgres", b.dbURL); err != nil {
		return err
	}
	b.db.SetMaxOpenConns(4)
	return nil
}

// cleanup stops every process, deletes the namespace from the shared
// Redis and drops the bench database.
func (b *bench) cleanup() error {
	for i := len(b.procs) - 1; i >= 0; i-- {
		b.procs[i].Stop()
	}
	if b.db != nil {
		b.db.Close()
	}
	var errs []string
	if err := stack.CleanNamespace(b.cfg.RedisURL, b.ns); err != nil {
		errs = append(errs, "clean the Redis namespace: "+err.Error())
	}
	if b.dbName != "" {
		if err := stack.DropDB(b.cfg.AdminURL, b.dbName); err != nil {
			errs = append(errs, "drop the bench database: "+err.Error())
		}
	}
	if len(errs) == 0 {
		os.RemoveAll(b.tmp)
		return nil
	}
	return fmt.Errorf("%s (logs kept in %s)", strings.Join(errs, "; "), b.tmp)
}

// clicksIn counts the clicks of a program in Postgres.
func (b *bench) clicksIn(ctx context.Context, programID int64) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM clicks WHERE program_id = $1`, programID).Scan(&n)
	return n, err
}

// waitClicks waits until the program has want clicks in Postgres and
// returns how long that took (ok false: not within timeout).
func (b *bench) waitClicks(ctx context.Context, programID, want int64, timeout time.Duration) (time.Duration, int64, bool) {
	start := time.Now()
	for {
		n, err := b.clicksIn(ctx, programID)
		if err == nil && n >= want {
			return time.Since(start), n, true
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			return time.Since(start), n, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func machine() string {
	model := ""
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	s := fmt.Sprintf("%d cores", runtime.NumCPU())
	if model != "" {
		s += " (" + model + ")"
	}
	return s
}

// loadAverage is the 1-minute load average of the machine (false when
// /proc/loadavg cannot be read).
func loadAverage() (float64, bool) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0, false
	}
	avg, err := strconv.ParseFloat(f[0], 64)
	return avg, err == nil
}

// busyLoad is the load average above which the bench says the machine was
// busy when it started: more than one runnable process on average, other
// work than the bench's own taking the cores.
const busyLoad = 1.0

// busyShare is the share of the cores' time, over the second before the
// first phase, above which other work was running then. The load average
// decays over minutes: right after a build (make bench compiles the load
// generator first, the bench the service) it reads above busyLoad on a
// machine that is idle again.
const busyShare = 0.25

// startBusy is the share of the cores' time that was busy over the second
// before the bench began (false when /proc/stat cannot be read).
func startBusy(ctx context.Context) (float64, bool) {
	before, err := stack.ReadCPU()
	if err != nil {
		return 0, false
	}
	select {
	case <-ctx.Done():
		return 0, false
	case <-time.After(time.Second):
	}
	after, err := stack.ReadCPU()
	if err != nil {
		return 0, false
	}
	return after.Sub(before).BusyShare(), true
}

// startShort is loadStatement's figures for the log of full runs.
func startShort(avg float64, known bool, busy float64, busyKnown bool) string {
	parts := []string{"load unknown"}
	if known {
		parts[0] = fmt.Sprintf("load %.2f", avg)
	}
	if busyKnown {
		parts = append(parts, fmt.Sprintf("cores %.0f %% busy", 100*busy))
	}
	return strings.Join(parts, ", ")
}

// commit names the checkout measured (git describe --always --dirty), and
// says when the edge or worker measured were built elsewhere; "" without
// git.
func (b *bench) commit() string {
	out, err := exec.Command("git", "-C", b.cfg.Repo, "describe", "--always", "--dirty", "--abbrev=7").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if b.cfg.EdgeBin != "" || b.cfg.WorkerBin != "" {
		c += " (edge or worker built elsewhere)"
	}
	return c
}

// loadStatement is what the bench says of the load it started under: the
// load average, and how busy the cores were in the second before it.
func loadStatement(avg float64, known bool, busy float64, busyKnown bool) string {
	cores := ""
	if busyKnown {
		cores = fmt.Sprintf("; the cores were %.0f %% busy in the second before it", 100*busy)
	}
	switch {
	case !known:
		return "Load average (1 min) unknown when the bench started (no /proc/loadavg)" + cores + "."
	case avg > busyLoad && busyKnown && busy <= busyShare:
		return fmt.Sprintf("Load average (1 min) %.2f when the bench started, above %g%s: the average still counted work "+
			"that had ended (such as the build of the bench itself), and the machine was idle.", avg, busyLoad, cores)
	case avg > busyLoad:
		return fmt.Sprintf("Load average (1 min) %.2f when the bench started%s: above %g, other work was already using the cores, "+
			"and the figures are lower and noisier than on an idle machine (the bench repeats nothing for it).", avg, cores, busyLoad)
	}
	return fmt.Sprintf("Load average (1 min) %.2f when the bench started (at most %g: an idle machine)%s.", avg, busyLoad, cores)
}

func mb(n int64) string { return strconv.FormatInt(n/(1<<20), 10) + " MB" }

func randHex(n int) string {
	buf := make([]byte, n)
	rand.Read(buf)
	return hex.EncodeToString(buf)
}

// counter is an accepted-click counter shared with a sampler.
type counter = atomic.Int64

func mkdir(parent, name string) (string, error) {
	dir := filepath.Join(parent, name)
	return dir, os.MkdirAll(dir, 0o755)
}
