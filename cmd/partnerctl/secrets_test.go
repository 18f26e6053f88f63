package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
	"github.com/partnertrack/partnertrack/ledger/secretbox"
)

// run runs partnerctl with env and args and returns its standard output.
func run(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand(func(k string) string { return env[k] }, nil)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestSecretsCommands: `secrets new-key` prints a key SECRETS_KEY takes;
// `migrate` seals secrets left in clear; `secrets rotate` re-seals every
// secret with the first key (and refuses to run without SECRETS_KEY),
// after which the old key is no longer needed.
func TestSecretsCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()

	oldKey, err := run(t, nil, "secrets", "new-key", "--id", "old")
	if err != nil || !strings.HasPrefix(oldKey, "old:") {
		t.Fatalf("new-key: %q, %v", oldKey, err)
	}
	oldKey = strings.TrimSpace(oldKey)
	newKey, _ := run(t, nil, "secrets", "new-key")
	newKey = strings.TrimSpace(newKey)
	newID, _, _ := strings.Cut(newKey, ":")
	if _, err := secretbox.Parse(newKey + "," + oldKey); err != nil || !strings.HasPrefix(newID, "k") {
		t.Fatalf("keys %q, %q: %v", newKey, oldKey, err)
	}

	// A secret sealed with the old key, and one left in clear from before
	// migration 00012.
	db.Secrets, _ = secretbox.Parse(oldKey)
	ws, err := postgres.NewAccountService(db.DB).CreateWorkspace(ctx, "Acme", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	programs := postgres.NewProgramService(db.DB)
	p, err := programs.CreateProgram(ctx, ws.ID, ledger.ProgramInput{Name: ledger.Some("Acme"), Domain: ledger.Some("acme.example"),
		CommissionType: ledger.Some("percent"), CommissionRate: ledger.Some(decimal.NewFromInt(30))})
	if err != nil {
		t.Fatal(err)
	}
	e, err := postgres.NewWebhookService(db.DB, nil).CreateEndpoint(ctx, p.ID, ledger.WebhookInput{
		URL: ledger.Some("https://brand.example/hook"), Events: ledger.Some([]string{ledger.EventSaleCreated})})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE programs DROP CONSTRAINT programs_stripe_webhook_secret_sealed_check`,
		`UPDATE programs SET stripe_webhook_secret = 'whsec_in_clear'`,
		`ALTER TABLE programs ADD CONSTRAINT programs_stripe_webhook_secret_sealed_check
			CHECK (stripe_webhook_secret LIKE 'enc:%') NOT VALID`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() (webhook, stripe string) {
		t.Helper()
		if err := db.QueryRow(`SELECT w.secret, p.stripe_webhook_secret FROM webhook_endpoints w
			JOIN programs p ON p.id = w.program_id WHERE w.id = $1`, e.ID).Scan(&webhook, &stripe); err != nil {
			t.Fatal(err)
		}
		return webhook, stripe
	}

	env := map[string]string{"DATABASE_URL": db.URL, "LOG_LEVEL": "error", "SECRETS_KEY": oldKey}
	if _, err := run(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	if w, s := stored(); !strings.HasPrefix(w, "enc:v1:old:") || !strings.HasPrefix(s, "enc:v1:old:") {
		t.Fatalf("after migrate: %q, %q", w, s)
	}

	if _, err := run(t, map[string]string{"DATABASE_URL": db.URL}, "secrets", "rotate"); err == nil ||
		!strings.Contains(err.Error(), "SECRETS_KEY is not set") {
		t.Fatalf("rotate without SECRETS_KEY: %v", err)
	}
	env["SECRETS_KEY"] = newKey
	if _, err := run(t, env, "secrets", "rotate"); err == nil || !strings.Contains(err.Error(), "SECRETS_KEY must hold every key") {
		t.Fatalf("rotate without the old key: %v", err)
	}
	env["SECRETS_KEY"] = newKey + "," + oldKey
	out, err := run(t, env, "secrets", "rotate")
	if err != nil || !strings.Contains(out, "re-sealed 1 webhook secrets and 1 Stripe secrets with key "+newID) {
		t.Fatalf("rotate: %q, %v", out, err)
	}
	w, s := stored()
	if !strings.HasPrefix(w, "enc:v1:"+newID+":") || !strings.HasPrefix(s, "enc:v1:"+newID+":") {
		t.Fatalf("after rotate: %q, %q", w, s)
	}
	db.Secrets, _ = secretbox.Parse(newKey)
	proc := postgres.NewProcessorService(db.DB, postgres.ProcessorOptions{})
	if got, err := proc.WebhookSecret(ctx, p.ID); err != nil || got != "whsec_in_clear" {
		t.Fatalf("read with the new key alone: %q, %v", got, err)
	}
	if got, err := postgres.NewWebhookService(db.DB, nil).WebhookTarget(ctx, e.ID); err != nil || got.Secret != e.Secret {
		t.Fatalf("webhook target with the new key alone: %+v, %v", got, err)
	}
}
