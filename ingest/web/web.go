package web

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/oauth2"

	"github.com/partnertrack/partnertrack/ingest/apiclient"
	"github.com/partnertrack/partnertrack/ledger"
)

// Provider is the sign-in provider: it verifies id_tokens, as API sign-in
// does, and names its authorization and token endpoints.
type Provider interface {
	ledger.IdentityVerifier
	Endpoint(ctx context.Context) (oauth2.Endpoint, error)
}

// Config is what the pages need from the edge.
type Config struct {
	PublicBaseURL string // the dashboard's own origin: the OIDC redirect and the tracker snippet
	// Provider, ClientID and ClientSecret are the sign-in provider and our
	// client at it (ClientSecret empty: a public client, PKCE only). A nil
	// Provider leaves sign-in off: the sign-in page says so.
	Provider     Provider
	ClientID     string
	ClientSecret string
	// SignIn and PartnerSignIn mint the sessions a browser sign-in opens:
	// one verified identity signs the person in as brand user and as
	// partner, so that one person can be both and switch.
	SignIn        ledger.SignInService
	PartnerSignIn ledger.PartnerSignInService
	// Limit, when set, is the per-client rate limit of the sign-in routes.
	Limit  fiber.Handler
	Logger *slog.Logger
	Now    func() time.Time
}

// Pages are the dashboard's routes.
type Pages struct {
	cfg    Config
	secure bool // cookies are Secure: the dashboard is served over HTTPS
	now    func() time.Time
	log    *slog.Logger
	api    *apiclient.ClientWithResponses

	handlerOnce sync.Once
	handler     fasthttp.RequestHandler
}

// Mount registers the pages on the edge's app; the pages call the app's
// own API routes in process.
func Mount(app *fiber.App, cfg Config) *Pages {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pages{cfg: cfg, now: cfg.Now, log: cfg.Logger, secure: strings.HasPrefix(cfg.PublicBaseURL, "https://")}
	// The handler is taken on first use, once every route is registered.
	p.api = newClient(inProcess{handler: func() fasthttp.RequestHandler {
		p.handlerOnce.Do(func() { p.handler = app.Handler() })
		return p.handler
	}})
	p.routes(app)
	return p
}

func (p *Pages) routes(app *fiber.App) {
	limit := p.cfg.Limit
	if limit == nil {
		limit = func(c *fiber.Ctx) error { return c.Next() }
	}
	app.Get(assetPrefix+":name", serveAsset)
	app.Get("/login", p.pageErrors, p.loginPage)
	app.Get("/auth/login", p.pageErrors, limit, p.startSignIn)
	app.Get("/auth/callback", p.pageErrors, limit, p.finishSignIn)
	app.Post("/logout", p.pageErrors, p.signOut)

	brand := app.Group("/app", p.pageErrors, p.requireArea(brandArea))
	p.brandRoutes(brand)
	partner := app.Group("/partner", p.pageErrors, p.requireArea(partnerArea))
	p.partnerRoutes(partner)
}
