-- +goose Up
-- Analytics rollups (issue 25): daily counters per program, partner and
-- link, so the performance endpoint and the partner portal read a few
-- rows per day instead of counting raw events. A program's days are its
-- timezone's (IANA name, UTC by default). partner_id and link_id are 0
-- where the event has none. The counters are kept by the transactions
-- that write the raw rows (migration 00017) and can be recomputed from
-- them (`partnerctl analytics verify` / `rebuild`).
ALTER TABLE programs ADD COLUMN timezone text NOT NULL DEFAULT 'UTC' CHECK (length(timezone) BETWEEN 1 AND 64);

-- Clicks, unique visitors (distinct click sessions of the day for this
-- partner and link) and settled leads, by the event's day.
CREATE TABLE rollup_traffic_daily (
    program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL DEFAULT 0,
    link_id     bigint NOT NULL DEFAULT 0,
    clicks      bigint NOT NULL DEFAULT 0 CHECK (clicks >= 0),
    visitors    bigint NOT NULL DEFAULT 0 CHECK (visitors >= 0),
    leads       bigint NOT NULL DEFAULT 0 CHECK (leads >= 0),
    PRIMARY KEY (program_id, day, partner_id, link_id)
);

-- Distinct sessions of a program's day: for the program as a whole
-- (partner_id = link_id = -1) and per partner and link.
CREATE TABLE rollup_sessions (
    program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL,
    link_id     bigint NOT NULL,
    session_id  text   NOT NULL,
    PRIMARY KEY (program_id, day, partner_id, link_id, session_id)
);

-- The program's unique visitors per day (distinct sessions across its
-- partners and links), which the per-link rows cannot add up to.
CREATE TABLE rollup_visitors_daily (
    program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    day         date   NOT NULL,
    visitors    bigint NOT NULL DEFAULT 0 CHECK (visitors >= 0),
    PRIMARY KEY (program_id, day)
);

-- Sales and their money per currency (minor units): conversions and
-- revenue on the sale's day, the commission its sale earned (its current
-- amount) on the sale's day, refunds and refunded amounts on the refund's
-- day. The link is the sale's customer's.
CREATE TABLE rollup_sales_daily (
    program_id        bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    day               date   NOT NULL,
    partner_id        bigint NOT NULL DEFAULT 0,
    link_id           bigint NOT NULL DEFAULT 0,
    currency          text   NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    conversions       bigint NOT NULL DEFAULT 0 CHECK (conversions >= 0),
    revenue_minor     bigint NOT NULL DEFAULT 0 CHECK (revenue_minor >= 0),
    commission_minor  bigint NOT NULL DEFAULT 0 CHECK (commission_minor >= 0),
    refunds           bigint NOT NULL DEFAULT 0 CHECK (refunds >= 0),
    refunded_minor    bigint NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
    PRIMARY KEY (program_id, day, partner_id, link_id, currency)
);

-- +goose Down
DROP TABLE rollup_sales_daily;
DROP TABLE rollup_visitors_daily;
DROP TABLE rollup_sessions;
DROP TABLE rollup_traffic_daily;
ALTER TABLE programs DROP COLUMN timezone;
