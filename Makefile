# partnertrack: `make run` starts the whole service on localhost,
# `make test` runs the whole test suite against the local Postgres and Redis.

GO ?= go
BIN := bin

# make run provisions through the operator API, so it enables it with a
# development token (the service itself defaults to no operator API).
OPERATOR_TOKEN ?= dev-operator-token
export OPERATOR_TOKEN
LOG_FORMAT ?= text
export LOG_FORMAT

.PHONY: all build run test vet fmt clean clean-testdb soak fuzz bench bench-micro screenshots

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Creates the database when missing, applies migrations, and runs the edge,
# a worker for every queue and the scheduler in one process on
# 127.0.0.1:8080, with the development sign-in (any email, no password),
# which refuses to start on an address a network can reach. With your own
# OIDC_ISSUER_URL set, the development sign-in stays off.
run: export LISTEN_ADDR ?= 127.0.0.1:8080
run: export DEV_SIGNIN ?= $(if $(OIDC_ISSUER_URL),0,1)
run: build
	@echo "partnertrack on http://localhost:8080 (operator token: $(OPERATOR_TOKEN))"
	$(BIN)/partnerctl dev

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

# The whole suite, against real Postgres and Redis, with the race detector.
# Every test that touches storage clones its own database and uses its own
# queue names, so packages and tests run in parallel.
test: vet
	$(GO) test -race -count=1 -timeout 15m ./...

# The long versions of the reliability scenarios (docs/reliability.md):
# faults, races, hostile input, isolation, slow clients and floods, run one
# at a time against the real binaries. Each scenario prints what it
# accepted and what it stored; the last line is "N passed, M failed". It
# starts Redis and Postgres servers of its own for the faults (never the
# shared ones) and needs redis-server and PostgreSQL's initdb installed.
SOAK_TIMEOUT ?= 60m
soak:
	$(GO) test -c -tags soak -o $(BIN)/reliability.test ./cmd/internal/reliability
	cd cmd/internal/reliability && $(CURDIR)/$(BIN)/reliability.test -test.parallel 1 -test.timeout $(SOAK_TIMEOUT)

# Fuzzes each decoder for FUZZTIME (make test runs them over their seed
# corpus only). New crashers land in testdata/fuzz: keep them as seeds.
FUZZTIME ?= 1m
INGEST_FUZZ := FuzzSaleBody FuzzLeadBody FuzzRefundBody FuzzClickBody FuzzLeanFieldsMatchFields
LEDGER_FUZZ := FuzzStorableJSON FuzzReferralCode FuzzQueryValueMatchesParseQuery FuzzValidLinkCodeMatchesRule
STRIPE_FUZZ := FuzzDecodeEvent
TASKS_FUZZ := FuzzClickWireMatchesMarshal FuzzWireDecodesAsV1
fuzz:
	@for f in $(INGEST_FUZZ); do echo "== ingest $$f"; $(GO) test ./ingest -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done
	@for f in $(LEDGER_FUZZ); do echo "== ledger $$f"; $(GO) test ./ledger -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done
	@for f in $(STRIPE_FUZZ); do echo "== ledger/stripe $$f"; $(GO) test ./ledger/stripe -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done
	@for f in $(TASKS_FUZZ); do echo "== workers/tasks $$f"; $(GO) test ./workers/tasks -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done

# The performance figures of issue 10 (docs/performance.md): the HTTP
# ceilings, the raw sale transaction, then the edge and worker built from
# this checkout, on databases and a Redis namespace of their own (dropped
# and deleted at the end; the shared Redis is never flushed), plus private
# redis-servers for the AOF comparison. Prints every figure as a ratio to
# its ceiling, one line per target and "N passed, M failed", and rewrites
# docs/performance.md, keeping its log of full runs (one line each: the
# date, the commit, the machine's speed and the verdict). A missed target
# still exits 0 (the report is the result); a broken run does not.
# BENCH_QUICK=1 runs short phases as a smoke check (it writes nothing).
# Not part of make test.
# BENCH_ONLY runs some phases alone and prints their rows, targets and
# notes (it writes nothing; BENCH_QUICK=1 shortens them too):
#   BENCH_ONLY=redis-kill  the clicks through a Redis kill;
#   BENCH_ONLY=money       the raw sale transaction, sales at max and at
#                          1 k/s, refunds at max and at 1 k/s;
#   BENCH_ONLY=clicks      the ceilings, then click intake at max twice
#                          around the sustained clicks;
#   BENCH_ONLY=listing     the event listing and the performance endpoint
#                          on the bulk-loaded clicks;
#   BENCH_ONLY=redis-scale the ceilings, then click intake on a 3-primary
#                          cluster against one Redis, and with
#                          REDIS_WAIT_REPLICAS=1 against 0;
#   BENCH_ONLY=drain       the click worker draining a backlog with the
#                          rollup trigger and without (issue 25);
#   BENCH_ONLY=aof         the ceilings, then click intake on a Redis
#                          without persistence, AOF everysec, AOF always.
# BENCH_EDGE_BIN and BENCH_WORKER_BIN measure binaries built from another
# checkout instead (the database is migrated by this checkout's
# partnerctl), to compare old and new code on the same machine in the
# same hour, e.g.
#   make bench BENCH_ONLY=money BENCH_EDGE_BIN=../old/bin/edge BENCH_WORKER_BIN=../old/bin/worker
# BENCH_SALES_MAX=N stops the sales-at-max phase after N sales, so that
# both builds leave the same rows before their refund phases.
BENCH_QUICK ?=
BENCH_ONLY ?=
BENCH_EDGE_BIN ?=
BENCH_WORKER_BIN ?=
BENCH_SALES_MAX ?=
BENCH_BINS = $(if $(BENCH_EDGE_BIN),--edge-bin $(BENCH_EDGE_BIN)) $(if $(BENCH_WORKER_BIN),--worker-bin $(BENCH_WORKER_BIN)) $(if $(BENCH_SALES_MAX),--sales-max $(BENCH_SALES_MAX))
bench:
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen
ifneq ($(BENCH_ONLY),)
	$(BIN)/loadgen bench --only $(BENCH_ONLY) $(if $(BENCH_QUICK),--quick) $(BENCH_BINS)
else ifeq ($(BENCH_QUICK),)
	$(BIN)/loadgen bench --command "make bench" --write docs/performance.md $(BENCH_BINS)
else
	$(BIN)/loadgen bench --quick --command "make bench BENCH_QUICK=1" $(BENCH_BINS)
endif

# Go micro-benchmarks of the hot paths, in every package that has some.
BENCHTIME ?= 1s
# Saves the dashboard's screenshots in docs/screenshots: the brand and
# partner browser journeys take them (README shows them).
screenshots:
	DASHBOARD_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'TestBrandJourney|TestPartnerJourney' ./cmd/internal/reliability

bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $$(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)

# Drops the databases tests leave behind when killed mid-run.
clean-testdb:
	psql -h 127.0.0.1 -U postgres -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'pt\_test\_%' OR datname LIKE 'pt\_tmpl\_%'" | \
		while read db; do psql -h 127.0.0.1 -U postgres -qc "ALTER DATABASE $$db WITH is_template false" -c "DROP DATABASE IF EXISTS $$db WITH (FORCE)"; done
