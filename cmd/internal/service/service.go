// Package service assembles the service's processes from configuration:
// it opens Postgres and Redis (failing fast with one line that names the
// variable to fix), builds the ledger services, the edge and the worker.
// The binaries in cmd only parse flags and call it.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/partnertrack/partnertrack/cmd/internal/config"
	"github.com/partnertrack/partnertrack/cmd/internal/metrics"
	"github.com/partnertrack/partnertrack/ingest"
	"github.com/partnertrack/partnertrack/ingest/enrich"
	"github.com/partnertrack/partnertrack/ingest/linkcache"
	"github.com/partnertrack/partnertrack/ingest/oidc"
	"github.com/partnertrack/partnertrack/ingest/oidc/devissuer"
	"github.com/partnertrack/partnertrack/ingest/traffic"
	"github.com/partnertrack/partnertrack/ingest/web"
	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/migrations"
	"github.com/partnertrack/partnertrack/notify"
	"github.com/partnertrack/partnertrack/notify/mail"
	"github.com/partnertrack/partnertrack/ratelimit"
	"github.com/partnertrack/partnertrack/workers"
	"github.com/partnertrack/partnertrack/workers/tasks"
)

// NewLogger returns the process logger: structured, to stderr.
func NewLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

// Backends are the connections every process holds.
type Backends struct {
	Config    config.Config
	Logger    *slog.Logger
	DB        *postgres.DB
	Redis     redis.UniversalClient
	Asynq     *asynq.Client
	Namespace tasks.Namespace
	enqueuer  *tasks.Enqueuer

	identityOnce sync.Once
	identity     ledger.IdentityVerifier
	closers      []func() // of what Edge started, run by Close before the connections close
}

const connectTimeout = 5 * time.Second

// Open connects to Postgres and Redis and checks that the schema is
// current. Each failure is one line naming the variable to fix.
func Open(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Backends, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	db, err := postgres.Open(cctx, cfg.DatabaseURL, postgres.DefaultPool)
	if err != nil {
		hint := "set DATABASE_URL"
		if strings.Contains(err.Error(), "does not exist") {
			hint = "run `partnerctl migrate` (it creates the database) or set DATABASE_URL"
		}
		return nil, fmt.Errorf("cannot reach Postgres at %s (%v); %s", config.Redacted(cfg.DatabaseURL), err, hint)
	}
	if err := migrations.CheckCurrent(cctx, db.DB.DB); err != nil {
		db.Close()
		return nil, fmt.Errorf("%v (DATABASE_URL=%s)", err, config.Redacted(cfg.DatabaseURL))
	}
	db.Secrets = cfg.Secrets
	redis.SetLogger(redisLog{logger}) // the library's logger is the process's
	rdb, err := OpenRedis(cctx, cfg.Redis)
	if err != nil {
		db.Close()
		return nil, err
	}
	// Warned once both stores answered: a process that cannot start says
	// only the one line naming the variable to fix.
	if cfg.Secrets == nil || cfg.Secrets.IsDev() {
		logger.Warn(config.DevSecretsWarning)
	}
	b := &Backends{
		Config:    cfg,
		Logger:    logger,
		DB:        db,
		Redis:     rdb,
		Asynq:     asynq.NewClientFromRedisClient(rdb),
		Namespace: tasks.Namespace(cfg.QueueNamespace),
	}
	b.enqueuer = &tasks.Enqueuer{
		Client:    b.Asynq,
		Namespace: b.Namespace,
		Breaker:   tasks.NewRedisBreaker("outbox-enqueue", b.logBreaker),
	}
	return b, nil
}

// Close releases the connections. The asynq client shares the Redis
// connection and is closed with it.
func (b *Backends) Close() error {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	return errors.Join(b.Redis.Close(), b.DB.Close())
}

// Edge builds the HTTP edge over the backends: the link cache (subscribed
// to invalidations), the click and visit pipeline behind its breaker, and
// the optional MaxMind database.
func (b *Backends) Edge(ctx context.Context) (*ingest.Server, error) {
	var geo *enrich.GeoDB
	if path := b.Config.GeoIPDBPath; path != "" {
		var err error
		if geo, err = enrich.OpenGeoDB(path); err != nil {
			return nil, fmt.Errorf("cannot open the MaxMind database %s (%v); set GEOIP_DB_PATH", path, err)
		}
		b.closers = append(b.closers, func() { geo.Close() })
	}
	trafficStore := postgres.NewTrafficStore(b.DB)
	cache := linkcache.New(trafficStore, b.Redis, b.Namespace.Key(linkcache.Channel), linkcache.Options{Logger: b.Logger})
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := cache.Start(sctx); err != nil {
		return nil, fmt.Errorf("%v; set %s", err, b.Config.Redis.Setting())
	}
	b.closers = append(b.closers, cache.Close)
	pipeline, pending, err := b.trafficPipeline(ctx, trafficStore, 0)
	if err != nil {
		return nil, err
	}
	trafficBreaker := pipeline.Breaker()
	programs := postgres.NewProgramService(b.DB)
	balances := postgres.NewBalanceService(b.DB)
	accounts := postgres.NewAccountService(b.DB)
	outbox := postgres.NewOutbox(b.DB, b.Enqueuer())
	reg, requests := b.edgeMetrics(outbox, func() map[string]gobreaker.State {
		return map[string]gobreaker.State{trafficBreaker.Name(): trafficBreaker.State()}
	}, pipeline.Stats())
	var store ratelimit.Store = ratelimit.NewMemory(200_000)
	if b.Config.RateLimitStore == "redis" {
		store = ratelimit.NewRedis(b.Redis, b.Namespace.Key("partnertrack:"))
	}
	// Leads and sales also resolve clicks still in the queue, from the
	// record the edge writes with each click batch; both relay the brand
	// webhooks they write right after commit.
	leads := postgres.NewLeadService(b.DB, pending).WithRelay(outbox, b.Logger)
	sales := postgres.NewSaleService(b.DB, postgres.SaleOptions{
		PlatformFeePercent: b.Config.PlatformFeePercent,
		Pending:            pending,
		Logger:             b.Logger,
		Relay:              outbox,
	})
	refunds := postgres.NewRefundService(b.DB, outbox, b.Logger)
	// Approvals and rejections relay their webhooks right after commit.
	balances.WithRelay(outbox, b.Logger)
	review := postgres.NewCommissionReviewService(b.DB, outbox, b.Logger)
	b.closers = append(b.closers, balances.WaitRelays, review.WaitRelays)
	// Relays started after a commit finish before the connections close;
	// one cut off would only leave its messages to the outbox sweep.
	b.closers = append(b.closers, leads.WaitRelays, sales.WaitRelays, refunds.WaitRelays)
	programPartners := postgres.NewProgramPartnerService(b.DB, outbox, b.Logger)
	b.closers = append(b.closers, programPartners.WaitRelays)
	// Invites and applications write emails and webhooks to the outbox.
	intake := postgres.NewIntakeService(b.DB, postgres.IntakeOptions{PublicBaseURL: b.Config.PublicBaseURL, Relay: outbox, Logger: b.Logger})
	b.closers = append(b.closers, intake.WaitRelays)
	// Payouts write webhooks, notifications and emails to the outbox.
	payouts := postgres.NewPayoutService(b.DB, outbox, b.Logger)
	b.closers = append(b.closers, payouts.WaitRelays)
	// The web dashboard's API: test webhook events relay after commit.
	webhookDeliveries := postgres.NewWebhookDeliveryService(b.DB, outbox, b.Logger)
	b.closers = append(b.closers, webhookDeliveries.WaitRelays)
	cli := postgres.NewCLIService(b.DB)
	partnerSignIn := postgres.NewPartnerAccountService(b.DB)
	srv := ingest.New(ingest.Config{
		PublicBaseURL:       b.Config.PublicBaseURL,
		OperatorToken:       b.Config.OperatorToken,
		TrustedProxies:      b.Config.TrustedProxies,
		BrandPrefix:         b.Config.BrandPrefix,
		StripeWebhookSecret: b.Config.StripeWebhookSecret,
		OIDCIssuerURL:       b.Config.OIDCIssuerURL,
		OIDCClientID:        b.Config.OIDCClientID,
		// The asynq dashboard is read-only unless OPS_QUEUES_READONLY=false.
		OpsQueuesWritable: !b.Config.OpsQueuesReadOnly,
	}, ingest.Services{
		Programs:      programs,
		Keys:          programs,
		Accounts:      accounts,
		Partners:      postgres.NewPartnerService(b.DB),
		BrandLinks:    postgres.NewBrandLinkService(b.DB),
		Leads:         leads,
		Sales:         sales,
		Refunds:       refunds,
		Commissions:   balances,
		Balances:      balances,
		Notifications: postgres.NewNotificationStore(b.DB),
		SignIn:        accounts,
		PartnerSignIn: partnerSignIn,
		Events:        postgres.NewEventService(b.DB),
		Settings:      programs,
		Identity:      b.IdentityVerifier(),
		CLILogin:      cli,
		CLI:           cli,
		Synthetic:     b.Synthetic(leads, sales, cache, pipeline),
		Readiness:     postgres.NewReadinessService(b.DB),
		Analytics:     postgres.NewAnalyticsService(b.DB),
		Tracking:      cache,
		TrackingCache: cache,
		Traffic:       pipeline,
		Webhooks:      postgres.NewWebhookService(b.DB, &notify.Guard{AllowPrivate: b.Config.WebhookAllowPrivateTarget}),
		Agents:        postgres.NewAgentService(b.DB),
		// The edge only stores and queues processor events.
		Processor: postgres.NewProcessorService(b.DB, postgres.ProcessorOptions{Enqueuer: b.Enqueuer(), Logger: b.Logger}),

		ProgramPartners:  programPartners,
		Groups:           postgres.NewGroupService(b.DB),
		Invites:          intake,
		Applications:     intake,
		CommissionReview: review,
		Performance:      postgres.NewPerformanceService(b.DB, nil),
		Embeds:           intake,
		// The partner portal's API (issue 26, helper A).
		Portal:  postgres.NewPortalService(b.DB, intake, nil),
		Payouts: payouts,
		// The web dashboard's API (issue 27).
		MemberPrograms:    programs,
		WebhookDeliveries: webhookDeliveries,
	}, ingest.Options{
		AllowedHosts: b.devSignInHosts(),
		Limiter:      ratelimit.New(store, nil),
		Logger:       b.Logger,
		GeoDB:        geo,
		Requests:     requests,
		Metrics:      metrics.Handler(reg),
		Queues:       b.queuesDashboard(),
		// A settings change drops the program's cached facts on every
		// edge instance before the next tracking call.
		ProgramChanged: func(ctx context.Context, programID int64) {
			if err := cache.InvalidateProgram(ctx, programID); err != nil {
				b.Logger.Warn("program cache invalidation not published", "program_id", programID, "err", err)
			}
		},
		Checks: map[string]ingest.Check{
			"postgres":      b.pingPostgres,
			"redis":         b.pingRedis,
			"queue_breaker": pipeline.Ready,
		},
	})
	// DEV_SIGNIN=1: the development OpenID provider on the edge itself,
	// which config allows on a loopback listener only.
	if b.Config.DevSignIn {
		dev, err := devissuer.New(devissuer.Config{IssuerURL: b.Config.OIDCIssuerURL, ClientID: b.Config.OIDCClientID})
		if err != nil {
			return nil, err
		}
		srv.App().Use(config.DevSignInPath, adaptor.HTTPHandler(dev))
		b.Logger.Warn("DEV_SIGNIN=1: anyone who can reach " + b.Config.PublicBaseURL + " signs in as any email; for local development only")
	}
	// The dashboard's pages: they call the API above in process.
	provider, _ := b.IdentityVerifier().(web.Provider)
	web.Mount(srv.App(), web.Config{
		PublicBaseURL: b.Config.PublicBaseURL,
		Provider:      provider,
		ClientID:      b.Config.OIDCClientID,
		ClientSecret:  b.Config.OIDCClientSecret,
		SignIn:        accounts,
		PartnerSignIn: partnerSignIn,
		Limit:         srv.SignInLimit(),
		Logger:        b.Logger,
	})
	return srv, nil
}

// trafficPipeline builds the edge's click and visit pipeline, spread over
// TRAFFIC_SHARDS queues and waiting for REDIS_WAIT_REPLICAS replicas, and
// the pending-click reader behind its breaker. Clicks and visits have a
// Redis client of their own (closed with the backends), with short
// timeouts and no retries, so that an outage diverts them to Postgres
// within the pipeline's deadline (traffic.RedisOptions); the breaker also
// keeps pending-click lookups off a Redis that is away. redisTimeout, when
// not zero, replaces the pipeline's per-batch Redis deadline (tests).
func (b *Backends) trafficPipeline(ctx context.Context, store ledger.TrafficStore, redisTimeout time.Duration) (*traffic.Pipeline, *traffic.Pending, error) {
	redisOpts, err := RedisOptions(b.Config.Redis)
	if err != nil {
		return nil, nil, err
	}
	clicksRedis := NewRedisClient(b.Config.Redis.Mode, traffic.RedisOptions(redisOpts))
	b.closers = append(b.closers, func() { clicksRedis.Close() })
	// One connection dialled now, so that the first click batch does not
	// spend its 50 ms on a dial; a busy machine may miss the short
	// timeouts once, so it tries until the connect deadline.
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	for err := clicksRedis.Ping(sctx).Err(); err != nil; err = clicksRedis.Ping(sctx).Err() {
		if sctx.Err() != nil {
			return nil, nil, fmt.Errorf("cannot reach Redis for clicks (%v); set %s", err, b.Config.Redis.Setting())
		}
		time.Sleep(20 * time.Millisecond) // paces the retries
	}
	pipeline := traffic.New(traffic.Config{
		Redis:           clicksRedis,
		Queue:           asynq.NewClientFromRedisClient(clicksRedis),
		Namespace:       b.Namespace,
		Shards:          b.Config.Redis.TrafficShards,
		WaitReplicas:    b.Config.Redis.WaitReplicas,
		OnBreakerChange: b.logBreaker,
		Store:           store,
		Logger:          b.Logger,
		RedisTimeout:    redisTimeout,
	})
	pending := &traffic.Pending{Redis: clicksRedis, Namespace: b.Namespace, Shards: b.Config.Redis.TrafficShards, Breaker: pipeline.Breaker()}
	return pipeline, pending, nil
}

// devSignInHosts are the only host names the edge answers for with
// DEV_SIGNIN=1 (loopback and PUBLIC_BASE_URL's host), so that a page that
// re-points its own name at 127.0.0.1 cannot sign in through the edge;
// none otherwise.
func (b *Backends) devSignInHosts() []string {
	if !b.Config.DevSignIn {
		return nil
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if u, err := url.Parse(b.Config.PublicBaseURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, strings.ToLower(u.Hostname()))
	}
	return hosts
}

// PendingClicks reads the pending-click records of clicks acknowledged by an
// edge whose batch may not have reached Postgres yet; the lead, sale and
// processor services resolve click ids with it.
func (b *Backends) PendingClicks() ledger.PendingClicks {
	return &traffic.Pending{Redis: b.Redis, Namespace: b.Namespace, Shards: b.Config.Redis.TrafficShards}
}

// Synthetic runs the CLI's test events and synthetic chains through the
// click endpoint's link cache and click pipeline and the given lead and
// sale services, with the chain's cap in Redis (shared by every edge
// instance).
func (b *Backends) Synthetic(leads ledger.LeadService, sales ledger.SaleService, links *linkcache.Cache, clicks *traffic.Pipeline) *ledger.Synthetic {
	return &ledger.Synthetic{
		Store:     postgres.NewSyntheticStore(b.DB),
		Cap:       ratelimit.NewCap(b.Redis, b.Namespace.Key("partnertrack:"), ledger.ChainCapRuns, ledger.ChainCapWindow, nil),
		Links:     links,
		LinkCache: links,
		Clicks:    clicks,
		Leads:     leads,
		Sales:     sales,
		Logger:    b.Logger,
	}
}

// IdentityVerifier is the sign-in provider's id_token verifier that
// dashboard sign-in and the CLI login callback share, or nil when
// OIDC_ISSUER_URL is unset (sign-in then answers 503). The provider is
// discovered on first use, so the edge starts while it is unreachable.
func (b *Backends) IdentityVerifier() ledger.IdentityVerifier {
	b.identityOnce.Do(func() {
		if b.Config.OIDCIssuerURL != "" {
			b.identity = oidc.New(oidc.Config{IssuerURL: b.Config.OIDCIssuerURL, ClientID: b.Config.OIDCClientID})
		}
	})
	return b.identity
}

func (b *Backends) pingPostgres(ctx context.Context) error { return b.DB.PingContext(ctx) }
func (b *Backends) pingRedis(ctx context.Context) error    { return b.Redis.Ping(ctx).Err() }

// upCollector says whether Postgres and Redis answer this process.
func (b *Backends) upCollector() prometheus.Collector {
	return metrics.NewUpCollector(map[string]metrics.Ping{"postgres": b.pingPostgres, "redis": b.pingRedis})
}

// edgeMetrics builds the edge's Prometheus registry: requests by route,
// the queues' depth and task outcomes (read from asynq), the outbox lag,
// the Redis breakers (the outbox's, and those breakers gives), whether
// Postgres and Redis answer, and the click and visit batches by outcome
// (clicks: diverted ones went straight to Postgres).
func (b *Backends) edgeMetrics(outbox *postgres.Outbox, breakers metrics.BreakerStates, clicks *traffic.Stats) (*prometheus.Registry, *metrics.HTTP) {
	reg := metrics.NewRegistry()
	requests := metrics.NewHTTP(reg)
	all, _ := b.Namespace.Queues("all", b.Config.Redis.TrafficShards) // "all" has no error
	queues := slices.Sorted(maps.Keys(all))
	reg.MustRegister(
		metrics.NewQueueCollector(asynq.NewInspectorFromRedisClient(b.Redis), queues),
		metrics.NewOutboxCollector(func(ctx context.Context) (int64, time.Time, error) {
			bl, err := outbox.Backlog(ctx)
			return bl.Unsent, bl.Oldest, err
		}, nil, b.Logger),
		metrics.NewBreakerCollector(b.breakerStates, breakers),
		b.upCollector(),
		metrics.NewTrafficCollector(clicks),
	)
	return reg, requests
}

func (b *Backends) breakerStates() map[string]gobreaker.State {
	return map[string]gobreaker.State{b.enqueuer.Breaker.Name(): b.enqueuer.Breaker.State()}
}

// queuesDashboard is the asynq dashboard (asynqmon) the edge serves at
// /ops/queues behind the operator token; nil without an operator token.
// It holds Redis connections of its own, closed with the backends.
func (b *Backends) queuesDashboard() http.Handler {
	if b.Config.OperatorToken == "" {
		return nil
	}
	conn, err := AsynqConn(b.Config.Redis)
	if err != nil {
		b.Logger.Warn("asynq dashboard disabled: Redis settings not understood by asynq", "err", err)
		return nil
	}
	h := asynqmon.New(asynqmon.Options{RootPath: "/ops/queues", RedisConnOpt: conn, ReadOnly: b.Config.OpsQueuesReadOnly})
	b.closers = append(b.closers, func() { h.Close() })
	return h
}

// Enqueuer is the asynq side of the transactional outbox, behind a
// circuit breaker.
func (b *Backends) Enqueuer() *tasks.Enqueuer { return b.enqueuer }

func (b *Backends) logBreaker(name string, from, to gobreaker.State) {
	b.Logger.Warn("circuit breaker changed state", "breaker", name, "from", from.String(), "to", to.String())
}

// Worker is up to two asynq servers over one set of handlers (one for
// the click and visit queues, one for the others, each with its own
// concurrency) and, in one process of the deployment, the scheduler.
type Worker struct {
	servers     []*asynq.Server
	mux         *asynq.ServeMux
	scheduler   *asynq.Scheduler
	startup     func() error
	metricsAddr string
	metrics     *http.Server
	listener    net.Listener
	served      chan error
}

// WorkerOptions select what a worker process runs.
type WorkerOptions struct {
	Queues string // comma-separated queue names, or "all"
	// Concurrency is how many tasks of the processor, notification,
	// webhook and maintenance queues run at once; TrafficConcurrency how
	// many click and visit tasks (Concurrency when zero). The traffic
	// queues have their own server because their concurrent tasks share
	// one insert, so they want many at once, while more money and
	// notification tasks at once than Postgres connections only add
	// contention beside the edge's sales.
	Concurrency        int
	TrafficConcurrency int
	Scheduler          bool
	// MetricsAddr, when set, is where the worker serves its Prometheus
	// metrics (task outcomes, webhook deliveries, breaker states, whether
	// Postgres and Redis answer).
	MetricsAddr string
	// Retry and DelayedTaskCheckInterval override the retry policy (tests).
	Retry                    workers.RetryPolicy
	DelayedTaskCheckInterval time.Duration
}

// trafficPoll is how often an idle traffic server looks for click and
// visit tasks (asynq polls every second by default). A click that arrives
// after a quiet spell then reaches Postgres within about 100 ms instead of
// up to a second, so a sale soon after it finds it there rather than in
// the edge's pending record; ten polls a second cost Redis next to nothing.
const trafficPoll = 100 * time.Millisecond

// Worker builds a worker over the backends.
func (b *Backends) Worker(opts WorkerOptions) (*Worker, error) {
	queues, err := b.Namespace.Queues(opts.Queues, b.Config.Redis.TrafficShards)
	if err != nil {
		return nil, err
	}
	reg := metrics.NewRegistry()
	webhookMetrics := metrics.NewWebhooks(reg)
	sender := notify.NewSender(notify.SenderConfig{
		Store:     postgres.NewWebhookService(b.DB, nil),
		Guard:     &notify.Guard{AllowPrivate: b.Config.WebhookAllowPrivateTarget},
		Logger:    b.Logger,
		OnAttempt: webhookMetrics.Observe,
	})
	reg.MustRegister(metrics.NewBreakerCollector(b.breakerStates, sender.BreakerStates), b.upCollector())
	outbox := postgres.NewOutbox(b.DB, b.Enqueuer())
	processor := postgres.NewProcessorService(b.DB, postgres.ProcessorOptions{
		Enqueuer: b.Enqueuer(),
		// Click ids in payment metadata also resolve clicks still in the
		// queue, from the record the edge writes with each click batch.
		Pending:            b.PendingClicks(),
		Leads:              postgres.NewLeadService(b.DB, b.PendingClicks()).WithRelay(outbox, b.Logger),
		Relay:              outbox,
		PlatformFeePercent: b.Config.PlatformFeePercent,
		BrandPrefix:        b.Config.BrandPrefix,
		Logger:             b.Logger,
	})
	mailer, err := b.mailer(queues)
	if err != nil {
		return nil, err
	}
	// The daily commission digest writes its emails to the outbox.
	digests := postgres.NewDigestService(b.DB, postgres.DigestOptions{PublicBaseURL: b.Config.PublicBaseURL, Relay: outbox, Logger: b.Logger})
	b.closers = append(b.closers, digests.WaitRelays)
	w := &Worker{
		mux: workers.NewMux(workers.Handlers{
			Outbox:         outbox,
			Housekeeper:    postgres.NewHousekeeper(b.DB),
			Commissions:    postgres.NewBalanceService(b.DB).WithRelay(outbox, b.Logger),
			Inbox:          &notify.Inbox{Store: postgres.NewNotificationStore(b.DB)},
			Processor:      processor,
			ProcessorInbox: processor,
			Traffic:        postgres.NewTrafficStore(b.DB),
			Redis:          b.Redis,
			Namespace:      b.Namespace,
			ClickBacklog:   workers.ClickBacklog(asynq.NewInspectorFromRedisClient(b.Redis), b.Namespace, b.Config.Redis.TrafficShards),
			Webhooks:       sender,
			Mailer:         mailer,
			Logger:         b.Logger,
			Digests:        digests,
		}),
	}
	w.mux.Use(metrics.NewTasks(reg, notify.IsBreakerOpen).Middleware)
	traffic, others := b.Namespace.SplitTraffic(queues)
	if opts.TrafficConcurrency == 0 {
		opts.TrafficConcurrency = opts.Concurrency
	}
	for _, s := range []struct {
		queues      map[string]int
		concurrency int
		poll        time.Duration
	}{{traffic, opts.TrafficConcurrency, trafficPoll}, {others, opts.Concurrency, 0}} {
		if len(s.queues) == 0 {
			continue
		}
		w.servers = append(w.servers, workers.NewServer(b.Redis, workers.ServerConfig{
			Queues: s.queues, Concurrency: s.concurrency, Logger: b.Logger,
			Retry: opts.Retry, DelayedTaskCheckInterval: opts.DelayedTaskCheckInterval,
			TaskCheckInterval: s.poll,
		}))
	}
	if opts.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(reg))
		w.metricsAddr = opts.MetricsAddr
		w.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	if opts.Scheduler {
		// The scheduler gets a connection of its own: asynq closes it on
		// shutdown and refuses to close a shared one.
		conn, err := AsynqConn(b.Config.Redis)
		if err != nil {
			return nil, err
		}
		if w.scheduler, err = workers.NewScheduler(conn, b.Namespace, b.Logger); err != nil {
			return nil, err
		}
		w.startup = func() error {
			// Prepare partitions now rather than an hour after start.
			_, err := b.Asynq.Enqueue(tasks.NewPartitionsEnsureTask(), asynq.Queue(b.Namespace.Queue(tasks.QueueMaintenance)))
			return err
		}
	}
	return w, nil
}

// mailer is the emails queue's Mailer when the worker serves that queue
// (nil otherwise): SMTP when SMTP_URL is set, else the log mailer, which
// sends nothing, so that a development worker runs without a mail server.
func (b *Backends) mailer(queues map[string]int) (mail.Mailer, error) {
	if _, ok := queues[b.Namespace.Queue(tasks.QueueEmails)]; !ok {
		return nil, nil
	}
	if b.Config.SMTP == nil {
		b.Logger.Info("SMTP_URL is not set: emails are logged, not sent")
		return mail.LogMailer{Logger: b.Logger}, nil
	}
	m, err := mail.NewSMTPMailer(*b.Config.SMTP, b.Config.SMTPFrom)
	if err != nil {
		return nil, fmt.Errorf("SMTP_FROM: %v", err)
	}
	b.Logger.Info("emails are sent through SMTP", "server", b.Config.SMTP.Addr(), "implicit_tls", b.Config.SMTP.ImplicitTLS)
	return m, nil
}

// Start runs the server (and scheduler) in the background.
func (w *Worker) Start() error {
	if w.metrics != nil {
		ln, err := net.Listen("tcp", w.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen on %s: %v; set --metrics-addr", w.metricsAddr, err)
		}
		w.listener = ln
	}
	for i, s := range w.servers {
		if err := s.Start(w.mux); err != nil {
			for _, started := range w.servers[:i] {
				started.Shutdown()
			}
			w.stopMetrics()
			return err
		}
	}
	if w.metrics != nil {
		w.served = make(chan error, 1)
		go func() { w.served <- w.metrics.Serve(w.listener) }()
	}
	if w.scheduler != nil {
		if err := w.scheduler.Start(); err != nil {
			w.shutdownServers()
			w.stopMetrics()
			return err
		}
		if err := w.startup(); err != nil {
			w.Shutdown()
			return err
		}
	}
	return nil
}

// Shutdown stops the scheduler, then lets running tasks finish (asynq
// waits for them up to its shutdown timeout and requeues the rest).
func (w *Worker) Shutdown() {
	if w.scheduler != nil {
		w.scheduler.Shutdown()
	}
	w.shutdownServers()
	w.stopMetrics()
}

// shutdownServers stops the servers at once, each letting its running
// tasks finish.
func (w *Worker) shutdownServers() {
	var wg sync.WaitGroup
	for _, s := range w.servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.Shutdown() }()
	}
	wg.Wait()
}

// stopMetrics stops serving metrics (or closes the listener that never
// served).
func (w *Worker) stopMetrics() {
	switch {
	case w.served != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.metrics.Shutdown(ctx)
		<-w.served
		w.served = nil
	case w.listener != nil:
		w.listener.Close()
	}
}

// MetricsAddr is the address the worker's metrics are served on ("" when
// not served).
func (w *Worker) MetricsAddr() string {
	if w.listener == nil {
		return ""
	}
	return w.listener.Addr().String()
}
