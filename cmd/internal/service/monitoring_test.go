package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"gopkg.in/yaml.v3"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/workers/redistest"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// The alert rules and the Grafana dashboard, from this package's directory.
var (
	alertsFile    = filepath.Join("..", "..", "..", "docs", "monitoring", "alerts.yml")
	alertsTest    = filepath.Join("..", "..", "..", "docs", "monitoring", "alerts_test.yml")
	dashboardFile = filepath.Join("..", "..", "..", "docs", "monitoring", "grafana-dashboard.json")
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var seriesName = regexp.MustCompile(`partnertrack_[a-zA-Z0-9_]+`)

// usedSeries lists the partnertrack_ series names a rules file or a
// dashboard names, sorted, each once.
func usedSeries(text string) []string {
	names := seriesName.FindAllString(text, -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// exposedFamilies reads the metric families of a Prometheus text
// exposition from its TYPE lines: name → type.
func exposedFamilies(text string) map[string]string {
	families := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = f[3]
		}
	}
	return families
}

// unexported returns the names of used that no family of exported
// provides: a histogram provides its _bucket, _sum and _count series
// (and a summary its _sum and _count), any other family only its name.
func unexported(used []string, exported map[string]string) []string {
	var missing []string
	for _, name := range used {
		if _, ok := exported[name]; ok {
			continue
		}
		provided := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, ok := strings.CutSuffix(name, suffix)
			if typ := exported[base]; ok && (typ == "histogram" || typ == "summary" && suffix != "_bucket") {
				provided = true
			}
		}
		if !provided {
			missing = append(missing, name)
		}
	}
	return missing
}

func TestUnexportedNamesEachMissingSeries(t *testing.T) {
	exported := map[string]string{"partnertrack_a_total": "counter", "partnertrack_h_seconds": "histogram", "partnertrack_g": "gauge"}
	used := usedSeries(`rate(partnertrack_a_total[5m]) / partnertrack_g
		histogram_quantile(0.99, partnertrack_h_seconds_bucket) partnertrack_h_seconds_count
		partnertrack_a_total_count partnertrack_g_sum partnertrack_h_second_bucket partnertrack_typo`)
	want := []string{"partnertrack_a_total_count", "partnertrack_g_sum", "partnertrack_h_second_bucket", "partnertrack_typo"}
	if got := unexported(used, exported); !slices.Equal(got, want) {
		t.Fatalf("unexported = %q, want %q", got, want)
	}
}

// scrape answers GET /metrics of the edge, twice: the second scrape holds
// the requests series of the first.
func scrapeEdge(t *testing.T, b *Backends) string {
	t.Helper()
	edge, err := b.Edge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edge.Shutdown(context.Background()) })
	var text string
	for range 2 {
		resp, err := edge.App().Test(httptest.NewRequest("GET", "/metrics", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("edge GET /metrics: %d %s", resp.StatusCode, body)
		}
		text = string(body)
	}
	return text
}

// scrapeWorker starts a worker of the maintenance queue and answers its
// GET /metrics once it has run a task (the task series exist from then).
func scrapeWorker(t *testing.T, b *Backends) string {
	t.Helper()
	w, err := b.Worker(WorkerOptions{Queues: tasks.QueueMaintenance, Concurrency: 1, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + w.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("worker GET /metrics: %d %s", resp.StatusCode, body)
		}
		if strings.Contains(string(body), "\npartnertrack_tasks_processed_total{") {
			return string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker ran no task within 60 s; its metrics:\n%s", body)
		}
	}
}

// TestMonitoringUsesExportedSeries checks that every partnertrack_ series
// the alert rules and the Grafana dashboard use is exported by the edge
// or the worker, as the service builds them over real Postgres and Redis.
// A queue's series exist once it holds a task and a worker's task series
// once it ran one: one maintenance task gives both.
func TestMonitoringUsesExportedSeries(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rdb := redistest.Client(t)
	ns := redistest.Namespace(t, rdb)
	env := map[string]string{"DATABASE_URL": db.URL, "REDIS_URL": redistest.URL(), "QUEUE_NAMESPACE": string(ns)}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.Asynq.Enqueue(tasks.NewPartitionsEnsureTask(), asynq.Queue(ns.Queue(tasks.QueueMaintenance))); err != nil {
		t.Fatal(err)
	}

	exported := exposedFamilies(scrapeEdge(t, b))
	for name, typ := range exposedFamilies(scrapeWorker(t, b)) {
		exported[name] = typ
	}
	for _, name := range []string{"partnertrack_queue_tasks", "partnertrack_dependency_up", "partnertrack_traffic_batches_total", "partnertrack_tasks_processed_total"} {
		if exported[name] == "" {
			t.Fatalf("%s is not exported: the processes under test are not the ones the dashboard reads", name)
		}
	}
	for _, path := range []string{alertsFile, dashboardFile} {
		text := readFile(t, path)
		used := usedSeries(text)
		if len(used) < 10 {
			t.Fatalf("%s uses only %q", path, used)
		}
		for _, name := range unexported(used, exported) {
			t.Errorf("%s uses %s, which neither the edge nor the worker exports", path, name)
		}
		// The check sees a misspelt name in this very file.
		typo := strings.Replace(text, "partnertrack_queue_tasks", "partnertrack_queue_task", 1)
		if typo == text || !slices.Contains(unexported(usedSeries(typo), exported), "partnertrack_queue_task") {
			t.Errorf("%s: a misspelt partnertrack_queue_tasks goes unnoticed", path)
		}
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Inputs        []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Datasource datasource `json:"datasource"`
			Definition string     `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		Expr       string     `json:"expr"`
		RefID      string     `json:"refId"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// promDS is the datasource of every query: the input Grafana asks for on
// import.
var promDS = datasource{Type: "prometheus", UID: "${DS_PROMETHEUS}"}

// TestDashboardImports checks what an import needs: the Prometheus
// datasource input, and every panel, query and variable on it.
func TestDashboardImports(t *testing.T) {
	d := readDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want a current one (39)", d.SchemaVersion)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v, want the one datasource input DS_PROMETHEUS", d.Inputs)
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource != promDS || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			queries++
			if q.Datasource != promDS || q.RefID == "" || !strings.Contains(q.Expr, "partnertrack_") {
				t.Errorf("panel %q query %q: datasource %+v, expr %q", p.Title, q.RefID, q.Datasource, q.Expr)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Datasource != promDS {
			t.Errorf("variable %s: datasource %+v", v.Name, v.Datasource)
		}
	}
	if queries < 20 {
		t.Errorf("%d queries", queries)
	}
}

// TestPromtool checks the alert rules and runs their unit tests with
// promtool, and has it parse every query of the dashboard (as recording
// rules, the dashboard's $queue variable standing for every queue).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH: install it (Debian's prometheus package; .ci/run does) to check docs/monitoring/alerts.yml")
	}
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", alertsFile)
	run("test", "rules", alertsTest)

	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, p := range readDashboard(t).Panels {
		for _, q := range p.Targets {
			rules = append(rules, rule{fmt.Sprintf("dashboard:panel_%d:%s", p.ID, q.RefID), strings.ReplaceAll(q.Expr, "$queue", ".*")})
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	queries := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(queries, out, 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", queries)
}
