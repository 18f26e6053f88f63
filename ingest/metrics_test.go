package ingest

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// requestLog is a function-field RequestObserver that keeps what it is
// told, label strings included, as Prometheus does.
type requestLog struct {
	mu   sync.Mutex
	seen []observed
}

type observed struct {
	method, route string // kept as given: a string into a reused buffer would change
	status        int
}

func (l *requestLog) ObserveRequest(method, route string, status int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, observed{method, route, status})
}

// TestMetricsByRoutePattern labels requests by route pattern and status,
// never by raw path, with label strings that stay intact after the next
// request reuses fiber's buffers; /metrics is served openly.
func TestMetricsByRoutePattern(t *testing.T) {
	b := setup(t)
	log := &requestLog{}
	app := newTestServer(b.db, b.clock, func(_ *Services, opts *Options) {
		opts.Requests = log
		opts.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") })
	}).App()
	do(t, app, req{"POST", "/api/v1/track/sale", "{}", nil})
	do(t, app, req{"GET", "/api/operator/v1/commissions/12345", nil, operator()})
	do(t, app, req{"GET", "/api/operator/v1/commissions/67890", nil, operator()})
	do(t, app, req{"GET", "/no/such/page/424242", nil, nil})
	r := do(t, app, req{"GET", "/metrics", nil, nil})
	if r.Status != 200 || string(r.Raw) != "# metrics\n" {
		t.Fatalf("metrics: %d %s", r.Status, r.Raw)
	}
	want := []string{
		"POST /api/v1/track/sale 401",
		"GET /api/operator/v1/commissions/:id 404",
		"GET /api/operator/v1/commissions/:id 404",
		"GET unmatched 404",
		"GET /metrics 200",
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var got []string
	for _, o := range log.seen {
		got = append(got, o.method+" "+o.route+" "+strconv.Itoa(o.status))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("observed %q, want %q", got, want)
	}
}
