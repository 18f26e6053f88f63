package config

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != DefaultDatabaseURL || c.RedisURL != DefaultRedisURL || c.ListenAddr != ":8080" ||
		c.PublicBaseURL != "http://localhost:8080" || c.BrandPrefix != "svc" || c.RateLimitStore != "memory" ||
		!c.PlatformFeePercent.IsZero() || c.WebhookAllowPrivateTarget || !c.OpsQueuesReadOnly || c.OperatorToken != "" {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	_, err := Load(env(map[string]string{
		"DATABASE_URL":         "mysql://x",
		"TRUSTED_PROXIES":      "10.0.0.0/99",
		"RATE_LIMIT_STORE":     "disk",
		"PLATFORM_FEE_PERCENT": "-1",
		"OIDC_ISSUER_URL":      "https://issuer.example",
	}))
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, name := range []string{"DATABASE_URL", "TRUSTED_PROXIES", "RATE_LIMIT_STORE", "PLATFORM_FEE_PERCENT", "OIDC_CLIENT_ID"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestRedacted(t *testing.T) {
	got := Redacted("postgres://app:s3cret@db:5432/pt")
	if strings.Contains(got, "s3cret") {
		t.Fatalf("password not redacted: %s", got)
	}
}

// TestLoadSecretsKey: SECRETS_KEY is parsed into the keyring whose first
// key seals; unset is the public development key; a malformed value is
// named without repeating the key.
func TestLoadSecretsKey(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || !c.Secrets.IsDev() {
		t.Fatalf("unset: %v, %v", c.Secrets, err)
	}
	key := "k2:" + strings.Repeat("A", 43) + "=,k1:" + strings.Repeat("B", 43) + "="
	if c, err = Load(env(map[string]string{"SECRETS_KEY": key})); err != nil || c.Secrets.IsDev() || c.Secrets.PrimaryID() != "k2" {
		t.Fatalf("set: %+v, %v", c.Secrets, err)
	}
	_, err = Load(env(map[string]string{"SECRETS_KEY": "k1:" + strings.Repeat("C", 20)}))
	if err == nil || !strings.Contains(err.Error(), "SECRETS_KEY") || strings.Contains(err.Error(), "CCCC") {
		t.Fatalf("malformed: %v", err)
	}
}

// TestLoadSMTP: SMTP_URL is parsed once (unset: no SMTP, emails are
// logged); a malformed one is refused in one line naming the variable and
// without its password; SMTP_FROM defaults and must be an address.
func TestLoadSMTP(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.SMTP != nil || c.SMTPFrom != "partnertrack <no-reply@localhost>" {
		t.Fatalf("unset: %+v, %q, %v", c.SMTP, c.SMTPFrom, err)
	}
	c, err = Load(env(map[string]string{"SMTP_URL": "smtps://u:pw@mail.example.com", "SMTP_FROM": "Acme <partners@acme.example>"}))
	if err != nil || c.SMTP == nil || c.SMTP.Host != "mail.example.com" || c.SMTP.Port != 465 || !c.SMTP.ImplicitTLS ||
		c.SMTP.Username != "u" || c.SMTP.Password != "pw" || c.SMTPFrom != "Acme <partners@acme.example>" {
		t.Fatalf("set: %+v, %q, %v", c.SMTP, c.SMTPFrom, err)
	}
	for _, bad := range []string{"mail.example.com:587", "smtp://u:s3cretpw@", "http://u:s3cretpw@mail.example.com", "smtp://u:s3cretpw@mail.example.com:99999"} {
		_, err := Load(env(map[string]string{"SMTP_URL": bad}))
		if err == nil {
			t.Errorf("SMTP_URL=%q accepted", bad)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "SMTP_URL must be") || strings.Contains(msg, "\n") || strings.Contains(msg, "s3cretpw") {
			t.Errorf("SMTP_URL=%q: error %q, want one line naming SMTP_URL without the password", bad, msg)
		}
	}
	if _, err := Load(env(map[string]string{"SMTP_FROM": "no-reply"})); err == nil || !strings.Contains(err.Error(), "SMTP_FROM") {
		t.Errorf("SMTP_FROM without a domain: %v", err)
	}
}

// TestLoadOIDCClientSecret: the secret is optional (a public PKCE client)
// and taken as given.
func TestLoadOIDCClientSecret(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.OIDCClientSecret != "" || c.DevSignIn {
		t.Fatalf("unset: %q %v, %v", c.OIDCClientSecret, c.DevSignIn, err)
	}
	c, err = Load(env(map[string]string{"OIDC_ISSUER_URL": "https://issuer.example", "OIDC_CLIENT_ID": "pt", "OIDC_CLIENT_SECRET": "s3 cret"}))
	if err != nil || c.OIDCClientSecret != "s3 cret" {
		t.Fatalf("set: %q, %v", c.OIDCClientSecret, err)
	}
}
