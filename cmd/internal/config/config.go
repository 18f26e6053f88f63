// Package config reads the service's configuration from the environment
// once, in cmd, validates it as a whole and hands a plain struct down.
// Libraries never read the environment.
package config

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger/secretbox"
	"github.com/partnertrack/partnertrack/notify/mail"
)

// Config is every setting of the contract's Configuration table.
type Config struct {
	DatabaseURL string
	RedisURL    string
	// Redis is the Redis deployment (its URL is RedisURL) and how click
	// traffic is spread over it.
	Redis                     Redis
	ListenAddr                string
	PublicBaseURL             string
	OperatorToken             string
	StripeWebhookSecret       string
	OIDCIssuerURL             string
	OIDCClientID              string
	TrustedProxies            []netip.Prefix
	BrandPrefix               string
	RateLimitStore            string // memory or redis
	GeoIPDBPath               string
	PlatformFeePercent        decimal.Decimal
	WebhookAllowPrivateTarget bool
	OpsQueuesReadOnly         bool
	LogLevel                  string
	LogFormat                 string
	QueueNamespace            string // asynq queue-name prefix (tests; empty in production)
	// SMTP is the parsed SMTP_URL; nil when unset, and the emails worker
	// then logs emails instead of sending them. SMTPFrom is their sender.
	SMTP     *mail.SMTPConfig
	SMTPFrom string
	// Secrets seals the signing secrets stored in Postgres (SECRETS_KEY);
	// the public development key when unset (Secrets.IsDev()).
	Secrets *secretbox.Keyring
	// OIDCClientSecret is our secret at the provider (OIDC_CLIENT_SECRET);
	// empty for a public client, which proves itself with PKCE alone.
	OIDCClientSecret string
	// DevSignIn serves the development OpenID provider at DevSignInPath
	// (DEV_SIGNIN); OIDCIssuerURL and OIDCClientID then name it.
	DevSignIn bool
}

// Defaults of the contract.
const (
	DefaultDatabaseURL   = "postgres://postgres@127.0.0.1:5432/partnertrack?sslmode=disable"
	DefaultRedisURL      = "redis://127.0.0.1:6379/0"
	DefaultListenAddr    = ":8080"
	DefaultPublicBaseURL = "http://localhost:8080"
)

// The development sign-in (DEV_SIGNIN=1): the edge serves the provider of
// package devissuer at PUBLIC_BASE_URL + DevSignInPath for this client.
const (
	DevSignInPath     = "/dev/oidc"
	DevSignInClientID = "partnertrack-dev"
)

// Load reads the configuration through getenv (os.Getenv in production)
// and reports every invalid variable at once.
func Load(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	c := Config{
		DatabaseURL:         get("DATABASE_URL", DefaultDatabaseURL),
		RedisURL:            get("REDIS_URL", DefaultRedisURL),
		ListenAddr:          get("LISTEN_ADDR", DefaultListenAddr),
		PublicBaseURL:       strings.TrimRight(get("PUBLIC_BASE_URL", DefaultPublicBaseURL), "/"),
		OperatorToken:       getenv("OPERATOR_TOKEN"),
		StripeWebhookSecret: get("STRIPE_WEBHOOK_SECRET", ""),
		OIDCIssuerURL:       get("OIDC_ISSUER_URL", ""),
		OIDCClientID:        get("OIDC_CLIENT_ID", ""),
		OIDCClientSecret:    getenv("OIDC_CLIENT_SECRET"),
		BrandPrefix:         get("BRAND_PREFIX", "svc"),
		RateLimitStore:      get("RATE_LIMIT_STORE", "memory"),
		GeoIPDBPath:         get("GEOIP_DB_PATH", ""),
		LogLevel:            get("LOG_LEVEL", "info"),
		LogFormat:           get("LOG_FORMAT", "json"),
		QueueNamespace:      get("QUEUE_NAMESPACE", ""),
		SMTPFrom:            get("SMTP_FROM", mail.DefaultFrom),
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		errs = append(errs, errors.New("DATABASE_URL must be a postgres:// URL"))
	}
	var redisErrs []error
	c.Redis, redisErrs = loadRedis(getenv, c.RedisURL)
	errs = append(errs, redisErrs...)
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("PUBLIC_BASE_URL must be an absolute http(s) URL"))
	}
	proxies, err := ParseTrustedProxies(getenv("TRUSTED_PROXIES"))
	if err != nil {
		errs = append(errs, fmt.Errorf("TRUSTED_PROXIES must be comma-separated CIDRs: %v", err))
	}
	c.TrustedProxies = proxies
	if !validPrefix(c.BrandPrefix) {
		errs = append(errs, errors.New("BRAND_PREFIX must be 1 to 20 lower-case letters or digits"))
	}
	if c.RateLimitStore != "memory" && c.RateLimitStore != "redis" {
		errs = append(errs, errors.New("RATE_LIMIT_STORE must be memory or redis"))
	}
	fee, err := decimal.NewFromString(get("PLATFORM_FEE_PERCENT", "0"))
	if err != nil || fee.IsNegative() || fee.GreaterThan(decimal.NewFromInt(100)) {
		errs = append(errs, errors.New("PLATFORM_FEE_PERCENT must be a number from 0 to 100"))
	}
	c.PlatformFeePercent = fee
	if c.WebhookAllowPrivateTarget, err = parseBool(get("WEBHOOK_ALLOW_PRIVATE_TARGETS", "false")); err != nil {
		errs = append(errs, errors.New("WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false"))
	}
	if c.OpsQueuesReadOnly, err = parseBool(get("OPS_QUEUES_READONLY", "true")); err != nil {
		errs = append(errs, errors.New("OPS_QUEUES_READONLY must be true or false"))
	}
	c.Secrets = secretbox.Dev()
	if v := strings.TrimSpace(getenv("SECRETS_KEY")); v != "" {
		if c.Secrets, err = secretbox.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("SECRETS_KEY must be comma-separated id:base64key pairs, the first sealing: %v", err))
		}
	}
	if v := strings.TrimSpace(getenv("SMTP_URL")); v != "" {
		smtp, err := mail.ParseSMTPURL(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://[user:pass@]host[:port]: %v", err))
		} else {
			c.SMTP = &smtp
		}
	}
	if _, err := netmail.ParseAddress(c.SMTPFrom); err != nil {
		errs = append(errs, errors.New("SMTP_FROM must be one email address, optionally with a name: Name <address>"))
	}
	if (c.OIDCIssuerURL == "") != (c.OIDCClientID == "") {
		errs = append(errs, errors.New("OIDC_ISSUER_URL and OIDC_CLIENT_ID must be set together"))
	}
	if c.DevSignIn, err = parseBool(get("DEV_SIGNIN", "false")); err != nil {
		errs = append(errs, errors.New("DEV_SIGNIN must be 1 or 0 (true or false)"))
	}
	if c.DevSignIn {
		errs = append(errs, devSignIn(&c)...)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, errors.New("LOG_LEVEL must be debug, info, warn or error"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, errors.New("LOG_FORMAT must be json or text"))
	}
	return c, errors.Join(errs...)
}

// DevSecretsWarning is logged at the start of every process that runs
// without SECRETS_KEY.
const DevSecretsWarning = "SECRETS_KEY is not set: signing secrets are sealed with the public development key; " +
	"set SECRETS_KEY (`partnerctl secrets new-key` prints one) before storing real secrets"

func validPrefix(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func parseBool(s string) (bool, error) { return strconv.ParseBool(s) }

// Redacted returns a URL with its password replaced, for log lines and
// error messages.
func Redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
