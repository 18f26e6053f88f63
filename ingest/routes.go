package ingest

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/partnertrack/partnertrack/ledger"
)

// routes registers every route of the edge. Global middleware runs in the
// order nosniff, request id, recovery, access log, deadline, body limit;
// each route then lists its error style, CORS (browser routes only), rate
// limit and authentication before its handler.
func (s *Server) routes() {
	app := s.app
	if len(s.allowedHosts) > 0 {
		app.Use(withAllowedHosts(s.allowedHosts))
	}
	app.Use(withNoSniff, withRequestID, s.withMetrics, s.withRecover, s.withAccessLog, s.withDeadline, s.withBodyLimit(maxBodyBytes))
	// A query string or path that is not text is refused in the route's
	// envelope, once its error style is set (params.go).
	app.Use(withTextParams)

	// Operations.
	app.Get("/healthz", s.healthz)
	app.Get("/readyz", s.readyz)
	app.Get("/docs/errors", errorReference)
	app.Get("/openapi.json", openAPIDocument)
	app.Get("/docs/api", apiReference)

	s.opsRoutes()

	// The browser tracker.
	app.Get("/tracker.js", s.serveTracker)
	app.Get("/js/"+s.cfg.BrandPrefix+"-tracker.js", s.serveTracker)

	s.trackingRoutes()
	s.dashboardRoutes()
	s.brandLinkRoutes()
	s.programPartnerRoutes()
	s.groupRoutes()
	s.intakeRoutes()
	s.commissionReviewRoutes()
	s.partnerSessionRoutes()
	s.embedRoutes()
	s.partnerPortalRoutes()
	s.operatorRoutes()
	s.agentRoutes()
	s.cliRoutes()
	s.programMeRoutes()
	s.processorRoutes()
	s.payoutRoutes()
	// After programMeRoutes: /api/v1/programs/:id/readiness must not
	// catch /api/v1/programs/me/readiness.
	s.dashboardAPIRoutes()
}

// opsRoutes mounts /metrics (open: keep it behind the network boundary) and
// the asynq dashboard at /ops/queues (operator token, security headers, no
// cross-site changes), when configured.
func (s *Server) opsRoutes() {
	if s.metricsHandler != nil {
		s.app.Get("/metrics", adaptor.HTTPHandler(s.metricsHandler))
	}
	if s.queuesHandler != nil {
		s.app.Use(queuesPath, withStyle(defaultStyle), s.opsSecurityHeaders, s.requireOpsToken, s.opsSameOrigin, s.opsReadOnly,
			adaptor.HTTPHandler(s.queuesHandler))
	}
}

// processorRoutes receive payment-processor events: Stripe Connect events
// of every connected account, and the events of a webhook a brand added on
// its own Stripe account (the path the reference CLI registers). No program
// key: the Stripe-Signature header authenticates them; the body may be up
// to 1 MiB (withBodyLimit).
func (s *Server) processorRoutes() {
	s.app.Post("/api/v1/webhooks/stripe", withStyle(processorStyle), s.stripeWebhook)
	s.app.Post("/webhooks/stripe/:programId", withStyle(processorStyle), s.brandStripeWebhook)
}

// trackingRoutes are the /api/v1/track/* endpoints of the spec.
func (s *Server) trackingRoutes() {
	// Sales and refunds: see saleChain and refundChain.
	s.limitedRoute("POST", "/api/v1/track/sale", s.saleChain(s.trackSale)...)
	s.limitedRoute("POST", "/api/v1/track/refund", s.refundChain(s.trackRefund)...)
	// Clicks, visits and the tracker config.
	s.browserRoute("POST", "/api/v1/track/click", withStyle(clickStyle), s.rateLimit("click", limitClick, byIP),
		s.requireProgramKey(keyAuth{optional: true}), s.trackClick)
	s.browserRoute("POST", "/api/v1/track/visit", withStyle(visitStyle), s.rateLimit("visit", limitVisit, byIP), s.trackVisit)
	s.browserRoute("GET", "/api/v1/track/config", withStyle(configStyle), s.rateLimit("config", limitConfig, byIP), s.trackerConfig)
	// Leads.
	s.browserRoute("POST", "/api/v1/track/lead", s.leadChain(s.trackLead)...)
}

// dashboardRoutes are sign-in and the routes a signed-in workspace member
// calls with a dashboard token.
func (s *Server) dashboardRoutes() {
	dashboard := s.requireSession(ledger.DashboardSession)
	s.limitedRoute("POST", "/api/v1/auth/session", withStyle(signInStyle), s.rateLimit("signin", limitSignIn, byIP), s.signIn)
	s.app.Delete("/api/v1/auth/session", withStyle(defaultStyle), dashboard, s.signOut)
	s.app.Get("/api/tracking/events/:programId", withStyle(defaultStyle), dashboard, s.listTrackingEvents)
	s.app.Get("/api/tracking/performance/:programId", withStyle(defaultStyle), dashboard, s.trackingPerformance)
	s.limitedRoute("GET", "/api/v1/programs/:id/settings", withStyle(defaultStyle),
		s.rateLimit("settings_get", limitSettings, byToken), dashboard, s.getSettings)
	s.limitedRoute("PATCH", "/api/v1/programs/:id/settings", withStyle(defaultStyle),
		s.rateLimit("settings_patch", limitSettings, byToken), dashboard, s.patchSettings)
	s.app.Post("/api/v1/programs/:id/api-key", withStyle(defaultStyle), dashboard, s.generateAPIKey)
	// Outbound webhooks (owner or admin) and the advertiser's notifications
	// (any member).
	s.app.Post("/api/v1/programs/:id/webhooks", withStyle(defaultStyle), dashboard, s.createWebhook)
	s.app.Get("/api/v1/programs/:id/webhooks", withStyle(defaultStyle), dashboard, s.listWebhooks)
	s.app.Delete("/api/v1/programs/:id/webhooks/:webhookId", withStyle(defaultStyle), dashboard, s.deleteWebhook)
	s.app.Get("/api/v1/programs/:id/notifications", withStyle(defaultStyle), dashboard, s.programNotifications)
}

// agentRoutes are the agent API of the contract: agt_ keys, one scope per
// endpoint.
func (s *Server) agentRoutes() {
	s.app.Get("/api/agent/v1/programs", s.agentChain(ledger.ScopeProgramsRead, s.agentPrograms)...)
	s.app.Get("/api/agent/v1/programs/:id", s.agentChain(ledger.ScopeProgramsRead, s.agentProgram)...)
	s.app.Patch("/api/agent/v1/programs/:id", s.agentChain(ledger.ScopeProgramsWrite, s.agentUpdateProgram)...)
}

// operatorRoutes are the operator API of the contract.
func (s *Server) operatorRoutes() {
	op := s.app.Group("/api/operator/v1", s.requireOperator)
	op.Post("/workspaces", s.opCreateWorkspace)
	op.Post("/workspaces/:id/members", s.opAddMember)
	op.Post("/users/:id/sessions", s.opCreateSession)
	op.Post("/users/:id/suspend", s.opSuspendUser)
	op.Post("/users/:id/unlink-identity", s.opUnlinkIdentity)
	op.Post("/programs", s.opCreateProgram)
	op.Post("/programs/:id/partners", s.opEnrollPartner)
	op.Post("/programs/:id/links", s.opCreateLink)
	op.Patch("/links/:id", s.opPatchLink)
	op.Post("/programs/:id/key-rotation", s.opMarkKeyRotation)
	op.Post("/programs/:id/processor-account", s.opConnectProcessor)
	op.Post("/agent-keys", s.opCreateAgentKey)
	op.Get("/customers", s.opFindCustomer)
	op.Get("/commissions/:id", s.opCommission)
	op.Post("/commissions/:id/approve", s.opApproveCommission)
	op.Post("/commissions/:id/mark-paid", s.opMarkCommissionPaid)
	op.Get("/partners/:id/balances", s.opBalances)
	op.Post("/partners/:id/withdrawals", s.opCreateWithdrawal)
	op.Get("/partners/:id/notifications", s.opPartnerNotifications)
	op.Get("/withdrawals/:id", s.opWithdrawal)
	op.Post("/withdrawals/:id/mark-paid", s.opMarkWithdrawalPaid)
}

// cliRoutes registers the CLI family: 60 requests a minute per API key or
// login token (else per IP), shared by every route of the family.
func (s *Server) cliRoutes() {
	limit := s.rateLimit("cli", limitCLI, byToken)
	login := s.requireSession(ledger.CLISession)
	key := s.requireProgramKey(keyAuth{})
	s.limitedRoute("POST", "/api/v1/cli/auth/start", withStyle(cliStartStyle), limit, s.cliAuthStart)
	s.limitedRoute("POST", "/api/v1/cli/auth/confirm", withStyle(cliCallbackStyle), limit, s.cliAuthConfirm)
	s.limitedRoute("POST", "/api/v1/cli/auth/callback", withStyle(cliCallbackStyle), limit, s.cliAuthCallback)
	s.limitedRoute("GET", "/api/v1/cli/auth/poll", withStyle(cliPollStyle), limit, s.cliAuthPoll)
	s.limitedRoute("POST", "/api/v1/cli/init", withStyle(cliInitStyle), limit, login, s.cliInit)
	s.limitedRoute("GET", "/api/v1/cli/programs", withStyle(cliProgramsStyle), limit, login, s.cliPrograms)
	s.limitedRoute("GET", "/api/v1/cli/status", withStyle(cliStatusStyle), s.withoutRequestIDBelow500, limit, key, s.cliStatus)
	s.limitedRoute("POST", "/api/v1/cli/test-event", withStyle(cliTestStyle), limit, key, s.cliTestEvent)
	s.limitedRoute("POST", "/api/v1/cli/stripe-connect", withStyle(cliStyle("Failed to connect Stripe")), limit, s.cliStripeConnect)
	// The page the login link opens: same origin as the callback it posts.
	s.limitedRoute("GET", "/cli/login", withStyle(defaultStyle), s.rateLimit("cli_page", limitCLI, byIP), s.cliLoginPage)
}

// programMeRoutes registers the routes of the key's own program.
func (s *Server) programMeRoutes() {
	key := s.requireProgramKey(keyAuth{typed: true})
	s.limitedRoute("GET", "/api/v1/programs/me/readiness", withStyle(readinessStyle),
		s.rateLimit("readiness", limitReadiness, byToken), key, s.readiness)
	s.limitedRoute("GET", "/api/v1/programs/me/analytics/sources", withStyle(sourcesStyle),
		s.rateLimit("sources", limitSources, byToken), key, s.analyticsSources)
}

// Route styles of the tracking endpoints.
var (
	saleStyle   = errorStyle{stableCodes: true, internalMessage: "Sale tracking failed"}
	refundStyle = errorStyle{stableCodes: true, internalMessage: "Refund tracking failed"}
)

// saleChain is the middleware of POST /api/v1/track/sale: sale and refund
// share one bucket of 120 a minute per API key.
func (s *Server) saleChain(h fiber.Handler) []fiber.Handler {
	return []fiber.Handler{withStyle(saleStyle), s.rateLimit("sale_refund", limitSaleRefund, byToken),
		s.requireProgramKey(keyAuth{emptyMessage: msgMissingToken}), h}
}

// refundChain is the middleware of POST /api/v1/track/refund.
func (s *Server) refundChain(h fiber.Handler) []fiber.Handler {
	return []fiber.Handler{withStyle(refundStyle), s.rateLimit("sale_refund", limitSaleRefund, byToken),
		s.requireProgramKey(keyAuth{emptyMessage: msgEmptyBearer}), h}
}
