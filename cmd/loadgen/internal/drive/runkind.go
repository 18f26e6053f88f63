package drive

// RunKind is `loadgen run`: one load against a running edge. It
// provisions its programs through the operator API, drives one kind of
// request at a rate or as fast as it can, prints throughput, percentiles
// and statuses, and for clicks how long until every accepted click was in
// Postgres.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"time"

	_ "github.com/lib/pq" // the Postgres driver
)

// Kinds are the request kinds a run drives.
var Kinds = []string{"click", "lead", "sale", "refund", "stripe"}

// KindOptions describe a run of `loadgen run`.
type KindOptions struct {
	Addr          string // the edge, host:port
	OperatorToken string
	Kind          string
	Rate          float64 // 0: as fast as Conns go
	Conns         int
	Duration      time.Duration
	DatabaseURL   string        // clicks: count them in Postgres until all are there
	StripeSecret  string        // stripe: the edge's STRIPE_WEBHOOK_SECRET
	Slow          time.Duration // count answers slower than this by second of the run (0: not)
	Settle        time.Duration // pause between provisioning and the load
	Programs      int           // sales and refunds: spread over this many programs (0: enough for the key limits)
	Out           io.Writer
}

// assumedMax is the throughput assumed for a max run's sales, to spread
// them over enough program keys (120 sale and refund calls a minute each).
const assumedMax = 4000

// RunKind runs the load.
func RunKind(ctx context.Context, o KindOptions) error {
	// A rate with connections given: the senders share them, as make
	// bench's fixed-rate phases do (a load balancer's connections).
	shared := o.Rate > 0 && o.Conns > 0
	if o.Conns <= 0 {
		o.Conns = 64
		if o.Rate > 0 {
			o.Conns = PoolSize(o.Rate)
		}
	}
	expected := o.Rate * o.Duration.Seconds()
	if o.Rate <= 0 {
		expected = assumedMax * o.Duration.Seconds()
	}
	programs, seeds := 1, 2
	switch o.Kind {
	case "click":
		seeds = 0
	case "lead":
		seeds = 0
	case "stripe":
		programs = 8
	case "sale":
		programs = int(expected)/100 + 1
	case "refund":
		programs = int(expected)/50 + 1 // its sales and its refunds share each key's minute
	default:
		return fmt.Errorf("kind must be one of %v", Kinds)
	}
	if o.Programs > 0 && (o.Kind == "sale" || o.Kind == "refund") {
		programs = max(programs, o.Programs)
	}
	if o.Kind == "stripe" && o.StripeSecret == "" {
		return fmt.Errorf("stripe events need the edge's webhook secret (--stripe-secret or STRIPE_WEBHOOK_SECRET)")
	}
	tag := "lg" + strconv.FormatInt(time.Now().UnixNano()%1e10, 36)
	start := time.Now()
	w, err := Provision(ctx, NewClient(o.Addr, 16), ProvisionOptions{OperatorToken: o.OperatorToken, Tag: tag,
		Programs: programs, Accounts: o.Kind == "stripe", SeedClicks: seeds})
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	fmt.Fprintf(o.Out, "provisioned %d programs in %s\n", programs, time.Since(start).Round(time.Millisecond))
	// The seed clicks go through the queue; without a pause the first
	// sales find them in the edge's pending record rather than Postgres.
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	c := NewClient(o.Addr, o.Conns)
	opts := Options{Rate: o.Rate, Workers: o.Conns, Duration: o.Duration, Slow: o.Slow}
	if shared {
		opts.Workers, opts.Conns = 2*PoolSize(o.Rate), o.Conns
	}
	var do Do
	switch o.Kind {
	case "click":
		do = Clicks(c, w.Programs, 0)
	case "lead":
		clicks := NewClickIDs(c, w.Programs[0], o.Conns)
		res := Run(ctx, Options{Workers: o.Conns, Duration: 10 * time.Minute, Limit: int64(expected)}, clicks.Do)
		fmt.Fprintln(o.Out, Row{Name: "clicks to lead on", Result: res}.Line())
		do = Leads(c, w.Programs[0], clicks.IDs(), tag)
	case "sale":
		do = NewSales(c, w.Programs, tag, o.Conns).Do
	case "refund":
		sales := NewSales(c, w.Programs, tag, o.Conns)
		res := Run(ctx, Options{Workers: o.Conns, Duration: 10 * time.Minute, Limit: int64(expected)}, sales.Do)
		fmt.Fprintln(o.Out, Row{Name: "sales to refund", Result: res}.Line())
		do, opts.Limit = sales.Refunds(), res.Success()
	case "stripe":
		do = Stripe(c, w.Programs, o.StripeSecret)
	}
	res := Run(ctx, opts, do)
	fmt.Fprintln(o.Out, Row{Name: o.Kind + "s", Result: res}.Line())
	if o.Slow > 0 {
		fmt.Fprintf(o.Out, "answers slower than %s by second of the run: %s\n", o.Slow, res.SlowSeconds())
	}
	if o.Kind == "click" && o.DatabaseURL != "" {
		took, err := waitStored(ctx, o.DatabaseURL, w.Programs[0].ID, res.Success(), 5*time.Minute)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "all %d accepted clicks in Postgres %s after the load stopped\n", res.Success(), took.Round(time.Millisecond))
	}
	return nil
}

// waitStored polls Postgres until the program has want clicks.
func waitStored(ctx context.Context, dsn string, programID, want int64, timeout time.Duration) (time.Duration, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	start := time.Now()
	for {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM clicks WHERE program_id = $1`, programID).Scan(&n); err != nil {
			return 0, err
		}
		if n >= want {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return 0, fmt.Errorf("%d of %d accepted clicks in Postgres after %s", n, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
