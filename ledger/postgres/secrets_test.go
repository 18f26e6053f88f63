package postgres_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/secretbox"
	"github.com/partnertrack/partnertrack/migrations"
)

// secretsBundle is a program with a webhook endpoint and a processor
// signing secret, written through the services.
type secretsBundle struct {
	*testBundle
	webhooks *postgres.WebhookService
	proc     *postgres.ProcessorService
	program  *ledger.Program
}

func setupSecrets(t *testing.T, keys *secretbox.Keyring) *secretsBundle {
	t.Helper()
	b := setup(t)
	b.db.DB.Secrets = keys
	return &secretsBundle{testBundle: b, webhooks: postgres.NewWebhookService(b.db.DB, nil),
		proc: postgres.NewProcessorService(b.db.DB, postgres.ProcessorOptions{Logger: discard}), program: MustProgram(t, b)}
}

// mustKeys returns a keyring of fresh keys named ids, the first sealing.
func mustKeys(tb testing.TB, ids ...string) (*secretbox.Keyring, []string) {
	tb.Helper()
	var specs []string
	for _, id := range ids {
		k, err := secretbox.NewKey(id)
		if err != nil {
			tb.Fatal(err)
		}
		specs = append(specs, k)
	}
	k, err := secretbox.Parse(strings.Join(specs, ","))
	if err != nil {
		tb.Fatal(err)
	}
	return k, specs
}

func mustParse(tb testing.TB, spec ...string) *secretbox.Keyring {
	tb.Helper()
	k, err := secretbox.Parse(strings.Join(spec, ","))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// mustSecrets writes one of each secret through the services and returns
// the endpoint id and both secrets.
func (b *secretsBundle) mustSecrets(tb testing.TB, stripeSecret string) (int64, string) {
	tb.Helper()
	ctx := context.Background()
	e, err := b.webhooks.CreateEndpoint(ctx, b.program.ID, ledger.WebhookInput{
		URL: ledger.Some("https://brand.example/hook"), Events: ledger.Some([]string{ledger.EventSaleCreated})})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := b.programs.UpdateSettings(ctx, b.program.ID,
		ledger.SettingsInput{StripeWebhookSecret: ledger.Some(stripeSecret)}); err != nil {
		tb.Fatal(err)
	}
	return e.ID, e.Secret
}

// stored returns the raw column values of both secrets.
func (b *secretsBundle) stored(tb testing.TB, endpointID int64) (webhook, stripe string) {
	tb.Helper()
	if err := b.db.QueryRow(`SELECT secret FROM webhook_endpoints WHERE id = $1`, endpointID).Scan(&webhook); err != nil {
		tb.Fatal(err)
	}
	if err := b.db.QueryRow(`SELECT COALESCE(stripe_webhook_secret, '') FROM programs WHERE id = $1`, b.program.ID).Scan(&stripe); err != nil {
		tb.Fatal(err)
	}
	return webhook, stripe
}

// wantReads checks that the services read both secrets back in clear.
func (b *secretsBundle) wantReads(tb testing.TB, endpointID int64, webhook, stripe string) {
	tb.Helper()
	ctx := context.Background()
	if got, err := b.webhooks.WebhookTarget(ctx, endpointID); err != nil || got.Secret != webhook {
		tb.Fatalf("webhook target %+v, %v; want secret %q", got, err, webhook)
	}
	if got, err := b.proc.WebhookSecret(ctx, b.program.ID); err != nil || got != stripe {
		tb.Fatalf("processor secret %q, %v; want %q", got, err, stripe)
	}
}

// TestSecretsSealedAtRest: neither the webhook signing secret nor the
// processor signing secret leaves any of its bytes in the database (the
// whole rows are searched, in text and as the decoded key), yet the
// services read both back; a plaintext write is refused by the schema.
func TestSecretsSealedAtRest(t *testing.T) {
	keys, _ := mustKeys(t, "k1")
	b := setupSecrets(t, keys)
	const stripe = "whsec_cHJvY2Vzc29yIHNpZ25pbmcgc2VjcmV0"
	endpointID, webhook := b.mustSecrets(t, stripe)

	var rows string
	if err := b.db.QueryRow(`SELECT (SELECT row_to_json(w)::text FROM webhook_endpoints w WHERE id = $1) ||
		(SELECT row_to_json(p)::text FROM programs p WHERE id = $2)`, endpointID, b.program.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{webhook, stripe} {
		b64 := strings.TrimPrefix(s, "whsec_")
		raw, _ := base64.StdEncoding.DecodeString(b64)
		if strings.Contains(rows, b64) || strings.Contains(rows, string(raw)) {
			t.Fatalf("a secret is stored in clear: %s", rows)
		}
	}
	w, s := b.stored(t, endpointID)
	if !strings.HasPrefix(w, "enc:v1:k1:") || !strings.HasPrefix(s, "enc:v1:k1:") {
		t.Fatalf("stored %q and %q, want sealed with k1", w, s)
	}
	b.wantReads(t, endpointID, webhook, stripe)

	for _, q := range []string{
		`UPDATE webhook_endpoints SET secret = 'whsec_plain' WHERE id = $1`,
		`UPDATE programs SET stripe_webhook_secret = 'whsec_plain' WHERE id = (SELECT program_id FROM webhook_endpoints WHERE id = $1)`,
	} {
		if _, err := b.db.Exec(q, endpointID); err == nil || !strings.Contains(err.Error(), "sealed_check") {
			t.Fatalf("plaintext write accepted: %v", err)
		}
	}
	// Removing the processor secret stores NULL, which the check allows.
	if _, err := b.programs.UpdateSettings(context.Background(), b.program.ID,
		ledger.SettingsInput{StripeWebhookSecret: ledger.Some("")}); err != nil {
		t.Fatal(err)
	}
	if _, s := b.stored(t, endpointID); s != "" {
		t.Fatalf("removed secret stored as %q", s)
	}
}

// TestSecretsRotate: with a new key put first, secrets sealed with the old
// key are still read; ResealSecrets re-seals every one with the new key,
// after which the old key can be dropped; a second run has nothing to do.
func TestSecretsRotate(t *testing.T) {
	old, oldSpec := mustKeys(t, "old")
	b := setupSecrets(t, old)
	const stripe = "whsec_rotate_me"
	endpointID, webhook := b.mustSecrets(t, stripe)
	before, _ := b.stored(t, endpointID)

	_, newSpec := mustKeys(t, "new")
	b.db.DB.Secrets = mustParse(t, newSpec[0])
	if _, err := b.webhooks.WebhookTarget(context.Background(), endpointID); err == nil {
		t.Fatal("a secret sealed with a key that is not in SECRETS_KEY opened")
	}
	b.db.DB.Secrets = mustParse(t, newSpec[0], oldSpec[0])
	b.wantReads(t, endpointID, webhook, stripe)

	n, err := b.db.DB.ResealSecrets(context.Background(), true)
	if err != nil || n != (postgres.SealCounts{WebhookSecrets: 1, StripeSecrets: 1}) {
		t.Fatalf("rotate: %+v, %v", n, err)
	}
	w, s := b.stored(t, endpointID)
	if !strings.HasPrefix(w, "enc:v1:new:") || !strings.HasPrefix(s, "enc:v1:new:") || w == before {
		t.Fatalf("after rotation %q and %q, want sealed with the new key", w, s)
	}
	b.db.DB.Secrets = mustParse(t, newSpec[0])
	b.wantReads(t, endpointID, webhook, stripe)
	if n, err := b.db.DB.ResealSecrets(context.Background(), true); err != nil || n != (postgres.SealCounts{}) {
		t.Fatalf("second rotation: %+v, %v", n, err)
	}
}

// TestSecretsSealPlaintext: secrets stored in clear before sealing are
// read as they are, and sealed by ResealSecrets without all (what
// `partnerctl migrate` runs), which leaves values sealed with an older
// key for the rotation.
func TestSecretsSealPlaintext(t *testing.T) {
	old, oldSpec := mustKeys(t, "old")
	b := setupSecrets(t, old)
	sealedID, sealedSecret := b.mustSecrets(t, "whsec_sealed")
	_, newSpec := mustKeys(t, "new")
	b.db.DB.Secrets = mustParse(t, newSpec[0], oldSpec[0])

	// Rows from before migration 00012: the checks skip existing rows.
	plain := MustProgram(t, b.testBundle)
	var plainID int64
	for _, q := range []string{
		`ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_secret_sealed_check`,
		`ALTER TABLE programs DROP CONSTRAINT programs_stripe_webhook_secret_sealed_check`,
		`UPDATE programs SET stripe_webhook_secret = 'whsec_plain_stripe' WHERE id = ` + strconv.FormatInt(plain.ID, 10),
		`INSERT INTO webhook_endpoints (program_id, url, secret, events)
			VALUES (` + strconv.FormatInt(plain.ID, 10) + `, 'https://brand.example/plain', 'whsec_plain_webhook', '{sale.created}')`,
		`ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_secret_sealed_check CHECK (secret LIKE 'enc:%') NOT VALID`,
		`ALTER TABLE programs ADD CONSTRAINT programs_stripe_webhook_secret_sealed_check
			CHECK (stripe_webhook_secret LIKE 'enc:%') NOT VALID`,
	} {
		if _, err := b.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	b.db.QueryRow(`SELECT id FROM webhook_endpoints WHERE program_id = $1`, plain.ID).Scan(&plainID)
	plainBundle := &secretsBundle{testBundle: b.testBundle, webhooks: b.webhooks, proc: b.proc, program: plain}
	plainBundle.wantReads(t, plainID, "whsec_plain_webhook", "whsec_plain_stripe")

	n, err := b.db.DB.ResealSecrets(context.Background(), false)
	if err != nil || n != (postgres.SealCounts{WebhookSecrets: 1, StripeSecrets: 1}) {
		t.Fatalf("seal plaintext: %+v, %v", n, err)
	}
	if w, s := plainBundle.stored(t, plainID); !strings.HasPrefix(w, "enc:v1:new:") || !strings.HasPrefix(s, "enc:v1:new:") {
		t.Fatalf("plaintext sealed as %q and %q", w, s)
	}
	if w, s := b.stored(t, sealedID); !strings.HasPrefix(w, "enc:v1:old:") || !strings.HasPrefix(s, "enc:v1:old:") {
		t.Fatalf("values under the old key changed: %q and %q", w, s)
	}
	plainBundle.wantReads(t, plainID, "whsec_plain_webhook", "whsec_plain_stripe")
	b.wantReads(t, sealedID, sealedSecret, "whsec_sealed")
	// Nothing in clear is left: the checks now hold for every row.
	for _, q := range []string{
		`ALTER TABLE webhook_endpoints VALIDATE CONSTRAINT webhook_endpoints_secret_sealed_check`,
		`ALTER TABLE programs VALIDATE CONSTRAINT programs_stripe_webhook_secret_sealed_check`,
	} {
		if _, err := b.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSealedSecretsMigration: migration 00012 over a database that holds
// secrets in clear and delivery errors naming internal addresses: the
// rows stay readable, plaintext writes are refused from then on, and the
// logged errors keep only a generic reason.
func TestSealedSecretsMigration(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	sqlDB := b.db.DB.DB.DB
	if _, err := b.db.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.UpTo(ctx, sqlDB, 11); err != nil {
		t.Fatal(err)
	}
	var programID, endpointID int64
	if err := b.db.QueryRow(`
		WITH w AS (INSERT INTO workspaces (name) VALUES ('Acme') RETURNING id)
		INSERT INTO programs (workspace_id, name, domain, commission_type, commission_rate, stripe_webhook_secret)
		SELECT id, 'Acme', 'acme.example', 'percent', 30, 'whsec_old_stripe' FROM w RETURNING id`).Scan(&programID); err != nil {
		t.Fatal(err)
	}
	if err := b.db.QueryRow(`INSERT INTO webhook_endpoints (program_id, url, secret, events)
		VALUES ($1, 'https://brand.example/hook', 'whsec_old_webhook', '{sale.created}') RETURNING id`, programID).Scan(&endpointID); err != nil {
		t.Fatal(err)
	}
	logged := map[string]string{
		`Post "https://brand.example/hook": dial tcp 10.1.2.3:443: connect: connection refused`:                                           "connection refused",
		`Post "https://brand.example/hook": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`:                   "timeout",
		`Post "https://brand.example/hook": dial tcp 127.0.0.1:443: notify: refused a loopback, private or link-local address: 127.0.0.1`: "blocked address",
		`Post "https://brand.example/hook": tls: failed to verify certificate: x509: certificate signed by unknown authority`:             "TLS error",
		`Post "https://brand.example/hook": dial tcp: lookup brand.example on 10.0.0.2:53: no such host`:                                  "host not found",
		`receiver answered HTTP 502`: "receiver answered HTTP 502",
	}
	for raw := range logged {
		if _, err := b.db.Exec(`INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, error)
			VALUES ($1, 'msg_1', 'sale.created', 1, $2)`, endpointID, raw); err != nil {
			t.Fatal(err)
		}
	}

	if err := migrations.Up(ctx, sqlDB, nil); err != nil {
		t.Fatal(err)
	}
	sb := &secretsBundle{testBundle: b, webhooks: postgres.NewWebhookService(b.db.DB, nil),
		proc: postgres.NewProcessorService(b.db.DB, postgres.ProcessorOptions{Logger: discard}), program: &ledger.Program{ID: programID}}
	sb.wantReads(t, endpointID, "whsec_old_webhook", "whsec_old_stripe")
	if _, err := b.db.Exec(`UPDATE webhook_endpoints SET secret = 'whsec_new' WHERE id = $1`, endpointID); err == nil {
		t.Fatal("a plaintext write was accepted after the migration")
	}
	rows, err := b.db.Query(`SELECT error FROM webhook_deliveries WHERE endpoint_id = $1`, endpointID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, r := range logged {
		want[r]++
	}
	for rows.Next() {
		var e string
		rows.Scan(&e)
		want[e]--
	}
	rows.Close()
	for r, n := range want {
		if n != 0 {
			t.Errorf("reason %q: %d more expected (log rewritten to %v)", r, n, want)
		}
	}
	if n, err := b.db.DB.ResealSecrets(ctx, false); err != nil || n != (postgres.SealCounts{WebhookSecrets: 1, StripeSecrets: 1}) {
		t.Fatalf("seal: %+v, %v", n, err)
	}
	sb.wantReads(t, endpointID, "whsec_old_webhook", "whsec_old_stripe")
}
