package reliability

import (
	"strings"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/ledger/secretbox"
	"github.com/partnertrack/partnertrack/ledger/stripetest"
	"github.com/partnertrack/partnertrack/notify/webhooktest"
)

// TestSecretsKeyReachesEveryProcess runs the edge and a worker with
// SECRETS_KEY set, as docker-compose does: the edge seals a brand's
// webhook secret and processor signing secret with the key (the columns
// hold neither), opens the processor secret to verify a brand-added Stripe
// webhook, and the worker opens the webhook secret to sign a delivery the
// receiver verifies. Neither process warns about the development key, and
// neither logs the key.
func TestSecretsKeyReachesEveryProcess(t *testing.T) {
	t.Parallel()
	sc := report(t, "isolation/secrets-key-reaches-every-process")
	st := sharedStack(t)
	key, err := secretbox.NewKey("rel")
	if err != nil {
		t.Fatal(err)
	}
	secret("SECRETS_KEY", key)
	secret("SECRETS_KEY key bytes", strings.TrimPrefix(key, "rel:"))
	st.extra = map[string]string{"SECRETS_KEY": key, "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"}
	e := st.startEdge(t, nil)
	worker := st.startWorker(t, []string{"--concurrency", "2"}, nil)

	w := mustWorld(t, e.client, nil)
	pid := itoa(w.ProgramID)
	rcv := webhooktest.NewReceiver(t)
	hook := e.must(t, 201, req{method: "POST", path: "/api/v1/programs/" + pid + "/webhooks", token: w.OwnerToken,
		body: map[string]any{"url": rcv.URL + "/hook", "events": []string{"sale.created"}}}).data()["secret"].(string)
	secret("webhook signing secret", hook)
	const programSecret = "whsec_reliability_sealed_program_secret"
	secret("program signing secret", programSecret)
	e.must(t, 200, req{method: "PATCH", path: "/api/v1/programs/" + pid + "/settings", token: w.OwnerToken,
		body: map[string]any{"stripe_webhook_secret": programSecret}})

	// Sealed with the configured key, no byte of either secret in clear.
	if n := st.count(t, `SELECT count(*) FROM webhook_endpoints w JOIN programs p ON p.id = w.program_id
		WHERE p.id = $1 AND w.secret LIKE 'enc:v1:rel:%' AND p.stripe_webhook_secret LIKE 'enc:v1:rel:%'
		AND strpos(row_to_json(w)::text || row_to_json(p)::text, $2) = 0
		AND strpos(row_to_json(w)::text || row_to_json(p)::text, $3) = 0`,
		w.ProgramID, strings.TrimPrefix(hook, "whsec_"), strings.TrimPrefix(programSecret, "whsec_")); n != 1 {
		t.Fatalf("the secrets are not sealed with SECRETS_KEY's key rel (%d rows)", n)
	}

	// The edge opens the processor secret: a brand-added Stripe webhook
	// signed with it is accepted, one signed otherwise refused.
	click := mustClick(t, e.client, w)
	ev := stripetest.CheckoutCompleted("").Set("metadata.svc_click_id", click)
	payload := ev.Payload()
	e.must(t, 400, req{method: "POST", path: "/webhooks/stripe/" + pid, body: payload,
		header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, programSecret+"x", time.Now())}})
	e.must(t, 200, req{method: "POST", path: "/webhooks/stripe/" + pid, body: payload,
		header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, programSecret, time.Now())}})

	// The worker opens the webhook secret: the sale.created delivery the
	// Stripe sale caused verifies with the secret shown at registration.
	deadline := time.Now().Add(time.Minute)
	for len(rcv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no webhook delivered within a minute; worker log:\n%s", worker.Logs.Text())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := rcv.Requests()[0]
	if err := webhooktest.Verify(hook, got.Header, got.Body, time.Now()); err != nil {
		t.Fatalf("the delivery does not verify with the endpoint's secret: %v", err)
	}
	for _, p := range st.procs {
		if strings.Contains(p.Logs.Text(), config.DevSecretsWarning) {
			t.Errorf("the %s warns about the development key although SECRETS_KEY is set", p.Name)
		}
	}
	sc.note("edge sealed both secrets with key rel; edge verified a brand Stripe webhook and the worker signed a delivery with them")
}
