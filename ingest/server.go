package ingest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ingest/enrich"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ratelimit"
)

// Config is what the edge needs to know about its deployment; cmd reads it
// from the environment.
type Config struct {
	PublicBaseURL  string         // docs_url, Link headers, CLI login links, tracker snippet
	OperatorToken  string         // bearer token of the operator API; empty disables it (404)
	TrustedProxies []netip.Prefix // whose X-Forwarded-For is believed
	BrandPrefix    string         // cookie and metadata key prefix (svc)
	RequestTimeout time.Duration  // deadline of every request's Postgres and Redis calls
	// OpsQueuesWritable lets the asynq dashboard change queues and tasks
	// (OPS_QUEUES_READONLY=false); by default it is read-only.
	OpsQueuesWritable bool
	// OIDCIssuerURL and OIDCClientID name the sign-in provider to the CLI
	// login page, which runs the provider's sign-in in the browser.
	OIDCIssuerURL string
	OIDCClientID  string
	// StripeWebhookSecret verifies POST /api/v1/webhooks/stripe; empty
	// disables that endpoint (404).
	StripeWebhookSecret string
}

// Services are the ledger services the handlers call.
type Services struct {
	Programs ledger.ProgramService
	Keys     ledger.KeyService
	Accounts ledger.AccountService
	Partners ledger.PartnerService
	Leads    ledger.LeadService
	// BrandLinks are the brand's own partner links (dashboard sign-in).
	BrandLinks ledger.BrandLinkService

	Sales         ledger.SaleService
	Refunds       ledger.RefundService
	Commissions   ledger.CommissionService
	Balances      ledger.BalanceService
	Notifications ledger.NotificationStore
	SignIn        ledger.SignInService
	// PartnerSignIn signs partners in to the partner API (its own tokens).
	PartnerSignIn ledger.PartnerSignInService
	Events        ledger.EventService
	Settings      ledger.SettingsService
	// Identity verifies sign-in id_tokens; nil when no OIDC provider is
	// configured, and sign-in then answers 503.
	Identity ledger.IdentityVerifier

	// The CLI family, readiness and analytics sources.
	CLILogin  ledger.CLILoginService
	CLI       ledger.CLIService
	Synthetic ledger.SyntheticService
	Readiness ledger.ReadinessService
	Analytics ledger.AnalyticsService
	// Tracking resolves referral codes and programs for the tracking
	// endpoints from memory (linkcache), without a Postgres round trip.
	Tracking ledger.TrackingDirectory
	// TrackingCache drops cached link and program facts on every edge
	// instance after a change commits.
	TrackingCache ledger.TrackingInvalidator
	// Traffic records clicks and visits durably (traffic.Pipeline).
	Traffic ledger.TrafficRecorder

	Webhooks  ledger.WebhookService // the brand's outbound webhook endpoints
	Agents    ledger.AgentService   // agent keys and their workspaces' programs
	Processor ledger.ProcessorInbox // payment-processor webhooks

	// ProgramPartners reads a program's partners for the brand.
	ProgramPartners ledger.ProgramPartnerService
	// Groups are a program's partner groups and their terms.
	Groups ledger.GroupService
	// Invites and Applications are how partners join a program (invites,
	// the public page and its applications).
	Invites      ledger.InviteService
	Applications ledger.ApplicationService
	// CommissionReview is the brand's review of its program's commissions
	// and the program's audit log.
	CommissionReview ledger.CommissionReviewService
	// Performance reads a program's numbers from the analytics rollups.
	Performance ledger.PerformanceService
	// Embeds are the referral widget's tokens and page (issue 26).
	Embeds ledger.EmbedService
	// Portal is what a signed-in partner reads and changes (issue 26).
	Portal ledger.PortalService
	// Payouts are a program's payouts, the partners' requests of them and
	// their payout methods (issue 26, helper B).
	Payouts ledger.PayoutService

	// The web dashboard's own API (issue 27): the signed-in user's
	// programs and their creation, and a webhook endpoint's delivery log
	// and test event.
	MemberPrograms    ledger.DashboardProgramService
	WebhookDeliveries ledger.WebhookDeliveryService
}

// Check is a readiness probe of one dependency.
type Check func(ctx context.Context) error

// Server is the edge: the fiber app and the dependencies of its handlers.
type Server struct {
	cfg     Config
	svc     Services
	limiter *ratelimit.Limiter
	checks  map[string]Check
	logger  *slog.Logger
	now     func() time.Time
	app     *fiber.App

	programChanged func(ctx context.Context, programID int64)
	devices        *enrich.Devices // User-Agent parsing for clicks
	geo            *enrich.GeoDB   // optional MaxMind database
	tracker        trackerScript   // tracker.js, rendered for the brand prefix
	requests       RequestObserver
	metricsHandler http.Handler
	queuesHandler  http.Handler
	opsCSP         string           // Content-Security-Policy of the asynq dashboard
	limitedRoutes  []limitedPattern // routes whose rate limiter refuses oversized bodies (limitedRoute)
	allowedHosts   []string         // Options.AllowedHosts
	keys           keyMemory        // program keys looked up lately, for refusals
}

// Options are the optional parts of a Server.
type Options struct {
	Limiter *ratelimit.Limiter // default: per-instance memory
	Checks  map[string]Check   // readiness probes by name
	Logger  *slog.Logger
	Now     func() time.Time
	// ProgramChanged, when set, is called after a program's settings
	// change commits, so that whatever caches programs (on this and every
	// other instance) drops its copy before the next tracking call.
	ProgramChanged func(ctx context.Context, programID int64)
	GeoDB          *enrich.GeoDB // optional click geo when no CDN header says it

	// Requests records every answered request (metrics); nil records none.
	Requests RequestObserver
	// Metrics serves GET /metrics when set.
	Metrics http.Handler
	// Queues, when set, is the asynq dashboard, served at /ops/queues
	// behind the operator token.
	Queues http.Handler
	// AllowedHosts, when set, are the only host names (lower case, no
	// port) the edge answers for; any other Host is refused with 421.
	// The development sign-in sets them (withAllowedHosts says why).
	AllowedHosts []string
}

// Limits of the HTTP server itself.
const (
	maxBodyBytes        = 64 << 10 // every JSON route
	maxWebhookBodyBytes = 1 << 20  // the processor webhook
	maxHeaderBytes      = 8 << 10
	defaultMemoryKeys   = 200_000
	userAgentCacheSize  = 10_000
)

// New builds the edge with every route registered.
func New(cfg Config, svc Services, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Limiter == nil {
		opts.Limiter = ratelimit.New(ratelimit.NewMemory(defaultMemoryKeys), opts.Now)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.BrandPrefix == "" {
		cfg.BrandPrefix = "svc"
	}
	s := &Server{cfg: cfg, svc: svc, limiter: opts.Limiter, checks: opts.Checks, logger: opts.Logger, now: opts.Now,
		programChanged: opts.ProgramChanged,
		devices:        enrich.NewDevices(userAgentCacheSize), geo: opts.GeoDB, tracker: renderTracker(cfg.BrandPrefix),
		requests: opts.Requests, metricsHandler: opts.Metrics, queuesHandler: opts.Queues, allowedHosts: opts.AllowedHosts}
	if s.queuesHandler != nil {
		s.opsCSP = queuesCSP(s.queuesHandler)
	}
	s.app = fiber.New(fiber.Config{
		AppName:               "partnertrack",
		ErrorHandler:          s.handleError,
		BodyLimit:             maxWebhookBodyBytes,
		ReadBufferSize:        maxHeaderBytes,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           60 * time.Second,
		DisableStartupMessage: true,
		CaseSensitive:         true,
		JSONEncoder:           json.Marshal,
		JSONDecoder:           json.Unmarshal,
	})
	s.routes()
	return s
}

// App returns the fiber app (tests drive it with app.Test).
func (s *Server) App() *fiber.App { return s.app }

// Listen serves on addr until Shutdown.
func (s *Server) Listen(addr string) error { return s.app.Listen(addr) }

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.app.ShutdownWithContext(ctx)
}
