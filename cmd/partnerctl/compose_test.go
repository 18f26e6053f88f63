package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// TestComposeFile checks docker-compose.yml without a Docker engine: the
// services the contract names are there, every worker queue is served,
// exactly one process per deployment runs the scheduler, every Redis fsyncs
// its AOF before it replies, and every
// variable the app services set is one the configuration reads. Where a
// compose client is installed it also validates the file.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "redis", "migrate", "edge"} {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	// Every Redis server fsyncs its AOF before it replies, so that an
	// acknowledged click outlives a crash of the process (docs/ingestion.md).
	servers := 0
	for name, svc := range f.Services {
		if len(svc.Command) == 0 || svc.Command[0] != "redis-server" {
			continue
		}
		servers++
		if cmd := strings.Join(svc.Command, " "); !strings.Contains(cmd, "--appendonly yes --appendfsync always") {
			t.Errorf("%s runs Redis without an AOF fsynced before each reply: %q", name, cmd)
		}
	}
	if servers < 7 { // redis and the cluster profile's six nodes
		t.Errorf("%d redis-server services, want the redis service and six cluster nodes", servers)
	}
	if ep := strings.Join(f.Services["migrate"].Entrypoint, " "); !strings.HasSuffix(ep, "partnerctl migrate") {
		t.Errorf("migrate service runs %q", ep)
	}
	// Each deployment (the app services sharing one database) serves every
	// queue and runs exactly one scheduler: the default stack and the
	// cluster profile's stack are two deployments.
	type deployment struct {
		served     map[string]bool
		schedulers int
	}
	deployments := map[string]*deployment{}
	for _, svc := range f.Services {
		ep := svc.Entrypoint
		if len(ep) == 0 || !strings.HasSuffix(ep[0], "/worker") {
			continue
		}
		db := svc.Environment["DATABASE_URL"]
		d := deployments[db]
		if d == nil {
			d = &deployment{served: map[string]bool{}}
			deployments[db] = d
		}
		args := strings.Join(ep[1:], " ")
		if !strings.Contains(args, "--scheduler=false") {
			d.schedulers++
		}
		for i, a := range ep {
			if a == "--queues" && i+1 < len(ep) {
				for _, q := range strings.Split(ep[i+1], ",") {
					d.served[q] = true
				}
			}
		}
	}
	if len(deployments) != 2 {
		t.Errorf("workers use %d databases, want 2 (the default stack and the cluster profile)", len(deployments))
	}
	for db, d := range deployments {
		for q := range tasks.AllQueues {
			if !d.served[q] {
				t.Errorf("%s: no worker serves queue %s", db, q)
			}
		}
		if d.schedulers != 1 {
			t.Errorf("%s: %d worker services run the scheduler, want exactly 1", db, d.schedulers)
		}
	}
	known := map[string]bool{}
	for _, k := range []string{"DATABASE_URL", "REDIS_URL", "LISTEN_ADDR", "PUBLIC_BASE_URL", "OPERATOR_TOKEN",
		"STRIPE_WEBHOOK_SECRET", "OIDC_ISSUER_URL", "OIDC_CLIENT_ID", "TRUSTED_PROXIES", "BRAND_PREFIX",
		"RATE_LIMIT_STORE", "GEOIP_DB_PATH", "PLATFORM_FEE_PERCENT", "WEBHOOK_ALLOW_PRIVATE_TARGETS",
		"OPS_QUEUES_READONLY", "LOG_LEVEL", "LOG_FORMAT", "QUEUE_NAMESPACE", "SECRETS_KEY", "SMTP_URL", "SMTP_FROM"} {
		known[k] = true
	}
	env := f.Services["edge"].Environment
	// Every process seals or opens signing secrets: all get the same key.
	for name, s := range f.Services {
		if s.Image != f.Services["edge"].Image {
			continue // Postgres, Redis and their one-shot setup services
		}
		if s.Environment["SECRETS_KEY"] != env["SECRETS_KEY"] || env["SECRETS_KEY"] == "" {
			t.Errorf("service %s has SECRETS_KEY %q, want the edge's %q", name, s.Environment["SECRETS_KEY"], env["SECRETS_KEY"])
		}
	}
	for k := range env {
		if !known[k] {
			t.Errorf("edge sets %s, which the configuration does not read", k)
		}
	}
	if _, err := config.Load(func(k string) string {
		if strings.HasPrefix(env[k], "${") {
			return ""
		}
		return env[k]
	}); err != nil {
		t.Errorf("compose environment does not load: %v", err)
	}

	for _, client := range [][]string{{"docker", "compose", "config", "-q"}, {"docker-compose", "config", "-q"}} {
		if _, err := exec.LookPath(client[0]); err != nil {
			continue
		}
		cmd := exec.Command(client[0], client[1:]...)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(string(out), "unknown") && client[0] == "docker" {
			continue // a docker client without the compose plugin
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(client, " "), err, out)
		}
		return
	}
}
