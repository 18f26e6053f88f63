package notify

import (
	"testing"
	"time"
)

// TestSignStandardWebhooksVector reproduces the test vector published with
// the Standard Webhooks reference implementations: a receiver's existing
// library accepts what Sign produces.
func TestSignStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		[]byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if _, err := Sign("whsec_not base64!", "msg_1", 1, nil); err == nil {
		t.Fatal("a secret that is not base64 signed something")
	}
}

// TestDefaultBackoff checks the contract's schedule: the first retry
// within a minute, later ones backing off so that the last of the
// webhooks queue's retries comes about a day after the first attempt.
func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	const retries = 8 // tasks.WebhookMaxRetry (tested against it in package workers)
	for i := 0; i < 100; i++ {
		if d := DefaultBackoff.Delay(0); d >= time.Minute || d < 20*time.Second {
			t.Fatalf("first retry after %s, want within a minute", d)
		}
	}
	exact := DefaultBackoff
	exact.Jitter = 0
	var total time.Duration
	for n := 0; n < retries; n++ {
		d := exact.Delay(n)
		if n > 0 && d <= exact.Delay(n-1) {
			t.Fatalf("retry %d after %s, not longer than the one before", n+1, d)
		}
		total += d
	}
	if total < 20*time.Hour || total > 36*time.Hour {
		t.Fatalf("the %d retries span %s, want about a day", retries, total)
	}
}

func TestDestination(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"https://hooks.example.com/a?b=c", "https://hooks.example.com:443"},
		{"http://hooks.example.com/a", "http://hooks.example.com:80"},
		{"http://127.0.0.1:9000/x", "http://127.0.0.1:9000"},
		{"https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443"},
	} {
		if got := Destination(tc.url); got != tc.want {
			t.Errorf("Destination(%s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}
