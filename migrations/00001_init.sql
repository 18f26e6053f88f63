-- +goose Up
-- The whole domain of the partner tracking service. Money is stored exactly:
-- amounts are bigint minor units (cents for USD and EUR, dong for VND), rates
-- are numeric. Never floats.

-- Workspaces are advertisers; users belong to them through memberships.
CREATE TABLE workspaces (
    id          bigserial PRIMARY KEY,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text        NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
    oidc_subject  text,
    suspended_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT users_email_key UNIQUE (email)
);
CREATE UNIQUE INDEX users_oidc_subject_key ON users (oidc_subject) WHERE oidc_subject IS NOT NULL;

CREATE TABLE memberships (
    workspace_id  bigint      NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id       bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role          text        NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX memberships_user_id_idx ON memberships (user_id);

-- Sign-in sessions: dashboard tokens and CLI login tokens. Only the SHA-256
-- of a token is stored.
CREATE TABLE sessions (
    id          bigserial PRIMARY KEY,
    user_id     bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        text        NOT NULL CHECK (kind IN ('dashboard', 'cli')),
    token_hash  bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    CONSTRAINT sessions_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);

-- CLI login sessions: pending until the person signs in, consumed by the
-- first poll after sign-in, expired five minutes after creation.
CREATE TABLE cli_sessions (
    state_hash    bytea       PRIMARY KEY,
    user_id       bigint      REFERENCES users (id) ON DELETE CASCADE,
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'signed_in', 'consumed')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    signed_in_at  timestamptz,
    consumed_at   timestamptz
);
CREATE INDEX cli_sessions_expires_at_idx ON cli_sessions (expires_at);

CREATE TABLE programs (
    id                     bigserial PRIMARY KEY,
    workspace_id           bigint      NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                   text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    domain                 text        NOT NULL CHECK (length(domain) BETWEEN 1 AND 253),
    commission_type        text        NOT NULL CHECK (commission_type IN ('percent', 'fixed', 'recurring_percent', 'recurring_fixed')),
    commission_rate        numeric     NOT NULL CHECK (commission_rate > 0),
    duration_months        integer     NOT NULL DEFAULT 0 CHECK (duration_months >= 0),
    cookie_duration        integer     NOT NULL DEFAULT 90 CHECK (cookie_duration BETWEEN 1 AND 365),
    lead_auth              text        NOT NULL DEFAULT 'server_required' CHECK (lead_auth IN ('server_required', 'browser_allowed')),
    hold_days              integer     NOT NULL DEFAULT 30 CHECK (hold_days BETWEEN 0 AND 365),
    currency               text        NOT NULL DEFAULT 'USD' CHECK (currency IN ('USD', 'EUR', 'VND')),
    status                 text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    stripe_webhook_secret  text,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT programs_percent_rate_check CHECK (
        commission_type NOT IN ('percent', 'recurring_percent') OR commission_rate <= 100
    )
);
CREATE INDEX programs_workspace_id_idx ON programs (workspace_id);

-- Program API keys: one live and one test key per program, stored as SHA-256
-- of the whole key (authentication is an exact match on the whole key).
-- Regeneration replaces the row's hash in place; marked_at/deadline carry
-- the rotation state of the live key.
CREATE TABLE program_keys (
    program_id   bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    mode         text        NOT NULL CHECK (mode IN ('live', 'test')),
    key_hash     bytea       NOT NULL,
    masked       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    rotated_at   timestamptz,
    marked_at    timestamptz,
    deadline     timestamptz,
    PRIMARY KEY (program_id, mode),
    CONSTRAINT program_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT program_keys_rotation_check CHECK ((marked_at IS NULL) = (deadline IS NULL))
);

-- Agent keys: issued by the operator only, confined to one workspace.
CREATE TABLE agent_keys (
    id            bigserial PRIMARY KEY,
    workspace_id  bigint      NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key_hash      bytea       NOT NULL,
    masked        text        NOT NULL,
    scopes        text[]      NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    CONSTRAINT agent_keys_key_hash_key UNIQUE (key_hash)
);
CREATE INDEX agent_keys_workspace_id_idx ON agent_keys (workspace_id);

-- Partners are people with one account across programs; enrolments join
-- them to programs.
CREATE TABLE partners (
    id          bigserial PRIMARY KEY,
    email       text        NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT partners_email_key UNIQUE (email)
);

CREATE TABLE enrollments (
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    partner_id  bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    status      text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'removed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (program_id, partner_id)
);
CREATE INDEX enrollments_partner_id_idx ON enrollments (partner_id);

-- Referral links. The code is what the `aff` (or `via`) parameter carries;
-- it is unique across the service. A link whose partner or program is gone
-- keeps its row ("Invalid referral link configuration").
CREATE TABLE links (
    id          bigserial PRIMARY KEY,
    program_id  bigint      REFERENCES programs (id) ON DELETE SET NULL,
    partner_id  bigint      REFERENCES partners (id) ON DELETE SET NULL,
    code        text        NOT NULL CHECK (length(code) BETWEEN 1 AND 64),
    active      boolean     NOT NULL DEFAULT true,
    is_test     boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT links_code_key UNIQUE (code)
);
CREATE INDEX links_program_id_idx ON links (program_id);
CREATE INDEX links_partner_id_idx ON links (partner_id);

-- Clicks and visits: hundreds of millions of rows, range-partitioned by month
-- on occurred_at. The click id is time-ordered (a ULID) and its timestamp is
-- occurred_at, so any click id names its partition.
CREATE TABLE clicks (
    click_id      text        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    program_id    bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    partner_id    bigint      REFERENCES partners (id) ON DELETE SET NULL,
    link_id       bigint      REFERENCES links (id) ON DELETE SET NULL,
    session_id    text,
    page_url      text,
    referrer_url  text,
    geo_country   text,
    geo_region    text,
    geo_city      text,
    device_type   text,
    device_os     text,
    browser_name  text,
    ip            inet,
    user_agent    text,
    converted     boolean     NOT NULL DEFAULT false,
    is_test       boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (click_id, occurred_at)
) PARTITION BY RANGE (occurred_at);
CREATE INDEX clicks_listing_idx ON clicks (program_id, occurred_at DESC) WHERE NOT is_test;
CREATE INDEX clicks_program_partner_idx ON clicks (program_id, partner_id, occurred_at);

CREATE TABLE visits (
    visit_id      text        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    program_id    bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    click_id      text,
    session_id    text,
    page_url      text,
    referrer_url  text,
    is_test       boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (visit_id, occurred_at)
) PARTITION BY RANGE (occurred_at);
CREATE INDEX visits_program_idx ON visits (program_id, occurred_at DESC);

-- Monthly partitions: this function creates the partitions of `months`
-- months starting at the month of `from` (idempotent). The maintenance
-- worker calls it daily to stay ahead; the default partitions catch
-- anything outside the prepared range.
-- +goose StatementBegin
CREATE FUNCTION ensure_monthly_partitions(parent text, from_ts timestamptz, months integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    start_month date := date_trunc('month', from_ts AT TIME ZONE 'UTC')::date;
    lo date;
    hi date;
    part text;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        lo := (start_month + make_interval(months => i))::date;
        hi := (start_month + make_interval(months => i + 1))::date;
        part := format('%s_%s', parent, to_char(lo, 'YYYY_MM'));
        IF to_regclass(part) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                part, parent,
                (lo::timestamp AT TIME ZONE 'UTC'), (hi::timestamp AT TIME ZONE 'UTC'));
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

CREATE TABLE clicks_default PARTITION OF clicks DEFAULT;
CREATE TABLE visits_default PARTITION OF visits DEFAULT;
SELECT ensure_monthly_partitions('clicks', now() - interval '2 months', 6);
SELECT ensure_monthly_partitions('visits', now() - interval '2 months', 6);

-- Customers move through the funnel click -> lead -> conversion and never
-- back. The customer key is saved only when a lead settles.
CREATE TABLE customers (
    id                     bigserial PRIMARY KEY,
    program_id             bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    partner_id             bigint      REFERENCES partners (id) ON DELETE SET NULL,
    link_id                bigint      REFERENCES links (id) ON DELETE SET NULL,
    click_id               text,
    click_occurred_at      timestamptz,
    customer_key           text        CHECK (length(customer_key) BETWEEN 1 AND 255),
    email                  text        CHECK (length(email) <= 320),
    status                 text        NOT NULL DEFAULT 'click' CHECK (status IN ('click', 'lead', 'conversion')),
    processor_customer_id  text,
    first_paid_at          timestamptz,
    is_test                boolean     NOT NULL DEFAULT false,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX customers_program_customer_key_key ON customers (program_id, customer_key) WHERE customer_key IS NOT NULL;
CREATE UNIQUE INDEX customers_program_click_id_key ON customers (program_id, click_id) WHERE click_id IS NOT NULL;
CREATE INDEX customers_click_id_idx ON customers (click_id) WHERE click_id IS NOT NULL;
CREATE INDEX customers_program_email_idx ON customers (program_id, lower(email)) WHERE email IS NOT NULL;
CREATE INDEX customers_program_processor_customer_idx ON customers (program_id, processor_customer_id) WHERE processor_customer_id IS NOT NULL;
CREATE INDEX customers_partner_id_idx ON customers (partner_id);

CREATE TABLE leads (
    id              bigserial PRIMARY KEY,
    program_id      bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    customer_id     bigint      REFERENCES customers (id) ON DELETE CASCADE,
    partner_id      bigint      REFERENCES partners (id) ON DELETE SET NULL,
    click_id        text,
    customer_key    text,
    email           text,
    session_id      text,
    page_url        text,
    event_name      text,
    mode            text        NOT NULL CHECK (mode IN ('server', 'browser')),
    provisional     boolean     NOT NULL DEFAULT false,
    settled_at      timestamptz,
    settled_by      text        CHECK (settled_by IN ('server_lead', 'processor_payment', 'browser_allowed')),
    self_referral   boolean     NOT NULL DEFAULT false,
    converted       boolean     NOT NULL DEFAULT false,
    is_test         boolean     NOT NULL DEFAULT false,
    occurred_at     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX leads_listing_idx ON leads (program_id, occurred_at DESC) WHERE NOT is_test;
CREATE INDEX leads_customer_id_idx ON leads (customer_id);
CREATE INDEX leads_partner_id_idx ON leads (partner_id);

-- Sales. transaction_id is stored as processor_event_id and is unique across
-- all programs.
CREATE TABLE sales (
    id                   bigserial PRIMARY KEY,
    program_id           bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    customer_id          bigint      REFERENCES customers (id) ON DELETE SET NULL,
    partner_id           bigint      REFERENCES partners (id) ON DELETE SET NULL,
    processor_event_id   text        NOT NULL CHECK (length(processor_event_id) BETWEEN 1 AND 255),
    amount_cents         bigint      NOT NULL CHECK (amount_cents > 0),
    currency             text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    refunded_cents       bigint      NOT NULL DEFAULT 0,
    sale_type            text        NOT NULL DEFAULT 'payment',
    payment_status       text        NOT NULL DEFAULT 'paid',
    is_recurring         boolean     NOT NULL DEFAULT false,
    is_test              boolean     NOT NULL DEFAULT false,
    source               text        NOT NULL CHECK (source IN ('api', 'processor', 'test_event')),
    click_id             text,
    provider             text,
    provider_payment_id  text,
    livemode             boolean,
    subscription_id      text,
    product_id           text,
    metadata             jsonb,
    occurred_at          timestamptz NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sales_processor_event_id_key UNIQUE (processor_event_id),
    CONSTRAINT sales_refunded_cents_check CHECK (refunded_cents BETWEEN 0 AND amount_cents)
);
CREATE INDEX sales_listing_idx ON sales (program_id, occurred_at DESC) WHERE NOT is_test;
CREATE INDEX sales_customer_id_idx ON sales (customer_id);
CREATE INDEX sales_partner_id_idx ON sales (partner_id);

-- Commissions. amount_minor is the current amount in minor units of
-- `currency` (reduced by partial refunds); original_minor is what the sale
-- earned. Status names: pending, approved (past pending, credited), paid
-- (paid out), reversed, refunded.
CREATE TABLE commissions (
    id              bigserial PRIMARY KEY,
    program_id      bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    partner_id      bigint      NOT NULL REFERENCES partners (id),
    sale_id         bigint      NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
    customer_id     bigint      REFERENCES customers (id) ON DELETE SET NULL,
    currency        text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    original_minor  bigint      NOT NULL CHECK (original_minor >= 0),
    amount_minor    bigint      NOT NULL CHECK (amount_minor >= 0),
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'paid', 'reversed', 'refunded')),
    credited        boolean     NOT NULL DEFAULT false,
    reason          text,
    approve_after   timestamptz NOT NULL,
    approved_at     timestamptz,
    paid_at         timestamptz,
    reversed_at     timestamptz,
    withdrawal_id   bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT commissions_sale_id_key UNIQUE (sale_id),
    CONSTRAINT commissions_amount_check CHECK (amount_minor <= original_minor)
);
CREATE INDEX commissions_due_idx ON commissions (approve_after) WHERE status = 'pending';
CREATE INDEX commissions_partner_id_idx ON commissions (partner_id, status);
CREATE INDEX commissions_program_id_idx ON commissions (program_id, status);

-- Refunds applied to sales. refund_id (the caller's id) makes a refund
-- idempotent per sale.
CREATE TABLE refunds (
    id               bigserial PRIMARY KEY,
    sale_id          bigint      NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
    program_id       bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    commission_id    bigint      REFERENCES commissions (id) ON DELETE SET NULL,
    refund_id        text        CHECK (length(refund_id) BETWEEN 1 AND 255),
    amount_cents     bigint      NOT NULL CHECK (amount_cents > 0),
    deduction_minor  bigint      NOT NULL DEFAULT 0 CHECK (deduction_minor >= 0),
    reason           text,
    source           text        NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'processor')),
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX refunds_sale_refund_id_key ON refunds (sale_id, refund_id) WHERE refund_id IS NOT NULL;
CREATE INDEX refunds_sale_id_idx ON refunds (sale_id);

-- The operator's platform fee on each attributed real sale.
CREATE TABLE platform_fees (
    id            bigserial PRIMARY KEY,
    sale_id       bigint      NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
    program_id    bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    currency      text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    rate_percent  numeric     NOT NULL CHECK (rate_percent >= 0),
    amount_minor  bigint      NOT NULL CHECK (amount_minor >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT platform_fees_sale_id_key UNIQUE (sale_id)
);
CREATE INDEX platform_fees_program_id_idx ON platform_fees (program_id, created_at);

-- Balances are an append-only ledger: the balance of a partner in a
-- currency is the sum of its entries. balance_accounts holds one row per
-- partner and currency, locked (FOR NO KEY UPDATE) to serialise changes; it
-- carries no amount.
CREATE TABLE balance_accounts (
    partner_id  bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    currency    text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partner_id, currency)
);

CREATE TABLE withdrawals (
    id              bigserial PRIMARY KEY,
    partner_id      bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    currency        text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    requested_minor bigint      NOT NULL CHECK (requested_minor > 0),
    amount_minor    bigint      NOT NULL CHECK (amount_minor >= 0),
    status          text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'paid', 'cancelled')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    paid_at         timestamptz,
    CONSTRAINT withdrawals_amount_check CHECK (amount_minor <= requested_minor)
);
CREATE INDEX withdrawals_partner_open_idx ON withdrawals (partner_id, currency) WHERE status = 'open';

ALTER TABLE commissions
    ADD CONSTRAINT commissions_withdrawal_id_fkey FOREIGN KEY (withdrawal_id) REFERENCES withdrawals (id) ON DELETE SET NULL;
CREATE INDEX commissions_withdrawal_id_idx ON commissions (withdrawal_id) WHERE withdrawal_id IS NOT NULL;

CREATE TABLE balance_entries (
    id             bigserial PRIMARY KEY,
    partner_id     bigint      NOT NULL,
    currency       text        NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('credit', 'deduction', 'payout')),
    amount_minor   bigint      NOT NULL,
    commission_id  bigint      REFERENCES commissions (id) ON DELETE SET NULL,
    refund_id      bigint      REFERENCES refunds (id) ON DELETE SET NULL,
    withdrawal_id  bigint      REFERENCES withdrawals (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (partner_id, currency) REFERENCES balance_accounts (partner_id, currency) ON DELETE CASCADE,
    CONSTRAINT balance_entries_sign_check CHECK (
        (kind = 'credit' AND amount_minor > 0) OR (kind IN ('deduction', 'payout') AND amount_minor < 0)
    )
);
CREATE INDEX balance_entries_account_idx ON balance_entries (partner_id, currency);
CREATE INDEX balance_entries_commission_id_idx ON balance_entries (commission_id) WHERE commission_id IS NOT NULL;

-- The transactional outbox: every side effect after a commit (notification,
-- brand webhook) is a row written in the same transaction as the change,
-- then handed to asynq with the row id as TaskID.
CREATE TABLE outbox (
    id          bigserial PRIMARY KEY,
    task_type   text        NOT NULL,
    queue       text        NOT NULL,
    payload     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;

-- In-app notifications: to a partner, or to a workspace (the advertiser).
-- outbox_id makes a redelivered task write one notification only.
CREATE TABLE notifications (
    id            bigserial PRIMARY KEY,
    outbox_id     bigint      NOT NULL,
    partner_id    bigint      REFERENCES partners (id) ON DELETE CASCADE,
    workspace_id  bigint      REFERENCES workspaces (id) ON DELETE CASCADE,
    kind          text        NOT NULL,
    title         text        NOT NULL,
    body          text        NOT NULL,
    data          jsonb       NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    read_at       timestamptz,
    CONSTRAINT notifications_outbox_id_key UNIQUE (outbox_id),
    CONSTRAINT notifications_recipient_check CHECK ((partner_id IS NULL) <> (workspace_id IS NULL))
);
CREATE INDEX notifications_partner_idx ON notifications (partner_id, id DESC) WHERE partner_id IS NOT NULL;
CREATE INDEX notifications_workspace_idx ON notifications (workspace_id, id DESC) WHERE workspace_id IS NOT NULL;

-- Outbound webhooks to the brand and their delivery log.
CREATE TABLE webhook_endpoints (
    id          bigserial PRIMARY KEY,
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    url         text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    secret      text        NOT NULL,
    events      text[]      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX webhook_endpoints_program_idx ON webhook_endpoints (program_id) WHERE deleted_at IS NULL;

CREATE TABLE webhook_deliveries (
    id           bigserial PRIMARY KEY,
    endpoint_id  bigint      NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    message_id   text        NOT NULL,
    event_type   text        NOT NULL,
    attempt      integer     NOT NULL,
    status_code  integer,
    latency_ms   integer,
    error        text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id DESC);

-- Connected payment-processor accounts and the raw events they send.
CREATE TABLE processor_accounts (
    account_id  text        PRIMARY KEY CHECK (account_id LIKE 'acct\_%'),
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    provider    text        NOT NULL DEFAULT 'stripe',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT processor_accounts_program_id_key UNIQUE (program_id)
);

CREATE TABLE processor_events (
    event_id      text        PRIMARY KEY,
    provider      text        NOT NULL DEFAULT 'stripe',
    account_id    text,
    program_id    bigint      REFERENCES programs (id) ON DELETE SET NULL,
    event_type    text        NOT NULL,
    livemode      boolean     NOT NULL DEFAULT false,
    payload       jsonb       NOT NULL,
    status        text        NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'processed', 'skipped', 'failed')),
    error         text,
    received_at   timestamptz NOT NULL DEFAULT now(),
    enqueued_at   timestamptz,
    processed_at  timestamptz
);
CREATE INDEX processor_events_unqueued_idx ON processor_events (received_at) WHERE enqueued_at IS NULL;

-- Tracking log: every tracking call's outcome worth showing in readiness and
-- the integration checklist (test events included, flagged).
CREATE TABLE tracking_logs (
    id          bigserial PRIMARY KEY,
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    event_type  text        NOT NULL CHECK (event_type IN ('click', 'lead', 'sale', 'refund', 'visit')),
    is_test     boolean     NOT NULL DEFAULT false,
    source      text        NOT NULL,
    reference   text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tracking_logs_program_idx ON tracking_logs (program_id, event_type, created_at DESC);

-- +goose Down
DROP TABLE tracking_logs;
DROP TABLE processor_events;
DROP TABLE processor_accounts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
DROP TABLE notifications;
DROP TABLE outbox;
DROP TABLE balance_entries;
ALTER TABLE commissions DROP CONSTRAINT commissions_withdrawal_id_fkey;
DROP TABLE withdrawals;
DROP TABLE balance_accounts;
DROP TABLE platform_fees;
DROP TABLE refunds;
DROP TABLE commissions;
DROP TABLE sales;
DROP TABLE leads;
DROP TABLE customers;
DROP TABLE visits;
DROP TABLE clicks;
DROP FUNCTION ensure_monthly_partitions(text, timestamptz, integer);
DROP TABLE links;
DROP TABLE enrollments;
DROP TABLE partners;
DROP TABLE agent_keys;
DROP TABLE program_keys;
DROP TABLE programs;
DROP TABLE cli_sessions;
DROP TABLE sessions;
DROP TABLE memberships;
DROP TABLE users;
DROP TABLE workspaces;
