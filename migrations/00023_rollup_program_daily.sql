-- +goose Up
-- A program-wide row per day (issue 25), so the performance endpoint's
-- days and totals read one row per day (and currency) instead of one per
-- link and day. rollup_visitors_daily already holds the program's row of
-- a day (its unique visitors): it gains the day's clicks and settled
-- leads. rollup_program_sales_daily holds the day's sales per currency,
-- with the definitions of rollup_sales_daily summed over partners and
-- links. The triggers of migration 00017 are replaced by versions that
-- write the program rows in the same statements' transaction, from the
-- same transition tables, so each event still counts exactly once. In
-- every trigger the program rows are written before the per-link rows
-- (the click statement's order: its main query writes the day's row
-- before the per-link rows of its unreferenced CTE), so writers of one
-- program lock rollup rows in one order.

-- Writers in flight finish before the backfill reads the per-link rows;
-- new ones wait for the new triggers.
LOCK TABLE rollup_traffic_daily, rollup_sales_daily, rollup_visitors_daily, rollup_sessions IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE rollup_visitors_daily
    ADD COLUMN clicks bigint NOT NULL DEFAULT 0 CHECK (clicks >= 0),
    ADD COLUMN leads  bigint NOT NULL DEFAULT 0 CHECK (leads >= 0);

CREATE TABLE rollup_program_sales_daily (
    program_id        bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    day               date   NOT NULL,
    currency          text   NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    conversions       bigint NOT NULL DEFAULT 0 CHECK (conversions >= 0),
    revenue_minor     bigint NOT NULL DEFAULT 0 CHECK (revenue_minor >= 0),
    commission_minor  bigint NOT NULL DEFAULT 0 CHECK (commission_minor >= 0),
    refunds           bigint NOT NULL DEFAULT 0 CHECK (refunds >= 0),
    refunded_minor    bigint NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
    PRIMARY KEY (program_id, day, currency)
);

INSERT INTO rollup_visitors_daily (program_id, day, clicks, leads)
SELECT program_id, day, sum(clicks), sum(leads) FROM rollup_traffic_daily GROUP BY 1, 2
ON CONFLICT (program_id, day) DO UPDATE SET clicks = EXCLUDED.clicks, leads = EXCLUDED.leads;

INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor, commission_minor,
    refunds, refunded_minor)
SELECT program_id, day, currency, sum(conversions), sum(revenue_minor), sum(commission_minor), sum(refunds),
    sum(refunded_minor)
FROM rollup_sales_daily GROUP BY 1, 2, 3;

-- Clicks: as in 00017, and the day's clicks join its new sessions in the
-- program's row.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_clicks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_clicks ORDER BY 1) x;
    WITH ev AS (
        SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date AS day,
            COALESCE(n.partner_id, 0) AS partner_id, COALESCE(n.link_id, 0) AS link_id, n.session_id
        FROM new_clicks n JOIN programs p ON p.id = n.program_id
        WHERE NOT n.is_test
    ), seen AS (
        INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
        SELECT DISTINCT program_id, day, partner_id, link_id, session_id FROM (
            SELECT program_id, day, partner_id, link_id, session_id FROM ev WHERE session_id IS NOT NULL
            UNION ALL
            SELECT program_id, day, -1, -1, session_id FROM ev WHERE session_id IS NOT NULL
        ) s
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING
        RETURNING program_id, day, partner_id, link_id
    ), traffic AS (
        INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors)
        SELECT program_id, day, partner_id, link_id, sum(clicks), sum(visitors)
        FROM (
            SELECT program_id, day, partner_id, link_id, count(*) AS clicks, 0 AS visitors FROM ev GROUP BY 1, 2, 3, 4
            UNION ALL
            SELECT program_id, day, partner_id, link_id, 0, count(*) FROM seen WHERE partner_id >= 0 GROUP BY 1, 2, 3, 4
        ) x
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
            SET clicks = rollup_traffic_daily.clicks + EXCLUDED.clicks,
                visitors = rollup_traffic_daily.visitors + EXCLUDED.visitors
    )
    INSERT INTO rollup_visitors_daily (program_id, day, clicks, visitors)
    SELECT program_id, day, sum(clicks), sum(visitors)
    FROM (
        SELECT program_id, day, count(*) AS clicks, 0 AS visitors FROM ev GROUP BY 1, 2
        UNION ALL
        SELECT program_id, day, 0, count(*) FROM seen WHERE partner_id = -1 GROUP BY 1, 2
    ) x
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (program_id, day) DO UPDATE
        SET clicks = rollup_visitors_daily.clicks + EXCLUDED.clicks,
            visitors = rollup_visitors_daily.visitors + EXCLUDED.visitors;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_leads_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_leads ORDER BY 1) x;
    INSERT INTO rollup_visitors_daily (program_id, day, leads)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date, count(*)
    FROM new_leads n
    JOIN programs p ON p.id = n.program_id
    WHERE NOT n.is_test AND n.settled_at IS NOT NULL
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (program_id, day) DO UPDATE
        SET leads = rollup_visitors_daily.leads + EXCLUDED.leads;
    INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, leads)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(n.partner_id, 0), COALESCE(cu.link_id, 0), count(*)
    FROM new_leads n
    JOIN programs p ON p.id = n.program_id
    LEFT JOIN customers cu ON cu.id = n.customer_id
    WHERE NOT n.is_test AND n.settled_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
        SET leads = rollup_traffic_daily.leads + EXCLUDED.leads;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- Lead updates: the deltas of each key, the program's days' (level 0)
-- before the partners' and links' (level 1).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_leads_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_leads ORDER BY 1) x;
    FOR r IN
        WITH d AS (
            SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date AS day,
                COALESCE(n.partner_id, 0) AS partner_id, COALESCE(cu.link_id, 0) AS link_id, 1 AS d
            FROM new_leads n JOIN programs p ON p.id = n.program_id
            LEFT JOIN customers cu ON cu.id = n.customer_id
            WHERE NOT n.is_test AND n.settled_at IS NOT NULL
            UNION ALL
            SELECT o.program_id, (o.occurred_at AT TIME ZONE p.timezone)::date,
                COALESCE(o.partner_id, 0), COALESCE(cu.link_id, 0), -1
            FROM old_leads o JOIN programs p ON p.id = o.program_id
            LEFT JOIN customers cu ON cu.id = o.customer_id
            WHERE NOT o.is_test AND o.settled_at IS NOT NULL
        )
        SELECT 0 AS level, program_id, day, 0::bigint AS partner_id, 0::bigint AS link_id, sum(d) AS delta
        FROM d GROUP BY 2, 3 HAVING sum(d) <> 0
        UNION ALL
        SELECT 1, program_id, day, partner_id, link_id, sum(d)
        FROM d GROUP BY 2, 3, 4, 5 HAVING sum(d) <> 0
        ORDER BY 1, 2, 3, 4, 5
    LOOP
        IF r.level = 0 AND r.delta > 0 THEN
            INSERT INTO rollup_visitors_daily (program_id, day, leads)
            VALUES (r.program_id, r.day, r.delta)
            ON CONFLICT (program_id, day) DO UPDATE
                SET leads = rollup_visitors_daily.leads + EXCLUDED.leads;
        ELSIF r.level = 0 THEN
            UPDATE rollup_visitors_daily SET leads = leads + r.delta
            WHERE (program_id, day) = (r.program_id, r.day);
        ELSIF r.delta > 0 THEN
            INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, leads)
            VALUES (r.program_id, r.day, r.partner_id, r.link_id, r.delta)
            ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
                SET leads = rollup_traffic_daily.leads + EXCLUDED.leads;
        ELSE
            UPDATE rollup_traffic_daily SET leads = leads + r.delta
            WHERE (program_id, day, partner_id, link_id) = (r.program_id, r.day, r.partner_id, r.link_id);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_sales_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_sales ORDER BY 1) x;
    INSERT INTO rollup_program_sales_daily (program_id, day, currency, conversions, revenue_minor)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date, n.currency, count(*), sum(n.amount_cents)
    FROM new_sales n
    JOIN programs p ON p.id = n.program_id
    WHERE NOT n.is_test
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (program_id, day, currency) DO UPDATE
        SET conversions = rollup_program_sales_daily.conversions + EXCLUDED.conversions,
            revenue_minor = rollup_program_sales_daily.revenue_minor + EXCLUDED.revenue_minor;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(n.partner_id, 0), COALESCE(cu.link_id, 0), n.currency, count(*), sum(n.amount_cents)
    FROM new_sales n
    JOIN programs p ON p.id = n.program_id
    LEFT JOIN customers cu ON cu.id = n.customer_id
    WHERE NOT n.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET conversions = rollup_sales_daily.conversions + EXCLUDED.conversions,
            revenue_minor = rollup_sales_daily.revenue_minor + EXCLUDED.revenue_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_refunds_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_refunds ORDER BY 1) x;
    INSERT INTO rollup_program_sales_daily (program_id, day, currency, refunds, refunded_minor)
    SELECT s.program_id, (n.created_at AT TIME ZONE p.timezone)::date, s.currency, count(*), sum(n.amount_cents)
    FROM new_refunds n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (program_id, day, currency) DO UPDATE
        SET refunds = rollup_program_sales_daily.refunds + EXCLUDED.refunds,
            refunded_minor = rollup_program_sales_daily.refunded_minor + EXCLUDED.refunded_minor;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, refunds, refunded_minor)
    SELECT s.program_id, (n.created_at AT TIME ZONE p.timezone)::date,
        COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0), s.currency, count(*), sum(n.amount_cents)
    FROM new_refunds n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    LEFT JOIN customers cu ON cu.id = s.customer_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET refunds = rollup_sales_daily.refunds + EXCLUDED.refunds,
            refunded_minor = rollup_sales_daily.refunded_minor + EXCLUDED.refunded_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_commissions_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_commissions ORDER BY 1) x;
    INSERT INTO rollup_program_sales_daily (program_id, day, currency, commission_minor)
    SELECT s.program_id, (s.occurred_at AT TIME ZONE p.timezone)::date, n.currency, sum(n.amount_minor)
    FROM new_commissions n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (program_id, day, currency) DO UPDATE
        SET commission_minor = rollup_program_sales_daily.commission_minor + EXCLUDED.commission_minor;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, commission_minor)
    SELECT s.program_id, (s.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0), n.currency, sum(n.amount_minor)
    FROM new_commissions n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    LEFT JOIN customers cu ON cu.id = s.customer_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET commission_minor = rollup_sales_daily.commission_minor + EXCLUDED.commission_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- Commission amount changes: the program's days' deltas (level 0)
-- before the partners' and links' (level 1).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_commissions_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_commissions ORDER BY 1) x;
    FOR r IN
        WITH d AS (
            SELECT s.program_id, (s.occurred_at AT TIME ZONE p.timezone)::date AS day,
                COALESCE(s.partner_id, 0) AS partner_id, COALESCE(cu.link_id, 0) AS link_id, x.currency, x.d
            FROM (
                SELECT n.sale_id, n.currency, n.amount_minor AS d FROM new_commissions n
                UNION ALL
                SELECT o.sale_id, o.currency, -o.amount_minor FROM old_commissions o
            ) x
            JOIN sales s ON s.id = x.sale_id
            JOIN programs p ON p.id = s.program_id
            LEFT JOIN customers cu ON cu.id = s.customer_id
            WHERE NOT s.is_test
        )
        SELECT 0 AS level, program_id, day, 0::bigint AS partner_id, 0::bigint AS link_id, currency, sum(d) AS delta
        FROM d GROUP BY 2, 3, 6 HAVING sum(d) <> 0
        UNION ALL
        SELECT 1, program_id, day, partner_id, link_id, currency, sum(d)
        FROM d GROUP BY 2, 3, 4, 5, 6 HAVING sum(d) <> 0
        ORDER BY 1, 2, 3, 4, 5, 6
    LOOP
        IF r.level = 0 AND r.delta > 0 THEN
            INSERT INTO rollup_program_sales_daily (program_id, day, currency, commission_minor)
            VALUES (r.program_id, r.day, r.currency, r.delta)
            ON CONFLICT (program_id, day, currency) DO UPDATE
                SET commission_minor = rollup_program_sales_daily.commission_minor + EXCLUDED.commission_minor;
        ELSIF r.level = 0 THEN
            UPDATE rollup_program_sales_daily SET commission_minor = commission_minor + r.delta
            WHERE (program_id, day, currency) = (r.program_id, r.day, r.currency);
        ELSIF r.delta > 0 THEN
            INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, commission_minor)
            VALUES (r.program_id, r.day, r.partner_id, r.link_id, r.currency, r.delta)
            ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
                SET commission_minor = rollup_sales_daily.commission_minor + EXCLUDED.commission_minor;
        ELSE
            UPDATE rollup_sales_daily SET commission_minor = commission_minor + r.delta
            WHERE (program_id, day, partner_id, link_id, currency)
                = (r.program_id, r.day, r.partner_id, r.link_id, r.currency);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose Down
-- The functions of migration 00017, unchanged.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_clicks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_clicks ORDER BY 1) x;
    -- One statement: the batch's sessions of each partner and link, and
    -- of the program (-1, -1), inserted in key order; the new ones are
    -- the visitors added, to the traffic rows and to the program's day.
    -- Every batch runs this same plan, so the two upserts (two tables)
    -- run in the same order in every transaction.
    WITH ev AS (
        SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date AS day,
            COALESCE(n.partner_id, 0) AS partner_id, COALESCE(n.link_id, 0) AS link_id, n.session_id
        FROM new_clicks n JOIN programs p ON p.id = n.program_id
        WHERE NOT n.is_test
    ), seen AS (
        INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
        SELECT DISTINCT program_id, day, partner_id, link_id, session_id FROM (
            SELECT program_id, day, partner_id, link_id, session_id FROM ev WHERE session_id IS NOT NULL
            UNION ALL
            SELECT program_id, day, -1, -1, session_id FROM ev WHERE session_id IS NOT NULL
        ) s
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING
        RETURNING program_id, day, partner_id, link_id
    ), traffic AS (
        INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks, visitors)
        SELECT program_id, day, partner_id, link_id, sum(clicks), sum(visitors)
        FROM (
            SELECT program_id, day, partner_id, link_id, count(*) AS clicks, 0 AS visitors FROM ev GROUP BY 1, 2, 3, 4
            UNION ALL
            SELECT program_id, day, partner_id, link_id, 0, count(*) FROM seen WHERE partner_id >= 0 GROUP BY 1, 2, 3, 4
        ) x
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
            SET clicks = rollup_traffic_daily.clicks + EXCLUDED.clicks,
                visitors = rollup_traffic_daily.visitors + EXCLUDED.visitors
    )
    INSERT INTO rollup_visitors_daily (program_id, day, visitors)
    SELECT program_id, day, count(*) FROM seen WHERE partner_id = -1 GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (program_id, day) DO UPDATE
        SET visitors = rollup_visitors_daily.visitors + EXCLUDED.visitors;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_leads_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_leads ORDER BY 1) x;
    INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, leads)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(n.partner_id, 0), COALESCE(cu.link_id, 0), count(*)
    FROM new_leads n
    JOIN programs p ON p.id = n.program_id
    LEFT JOIN customers cu ON cu.id = n.customer_id
    WHERE NOT n.is_test AND n.settled_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
        SET leads = rollup_traffic_daily.leads + EXCLUDED.leads;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_leads_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_leads ORDER BY 1) x;
    FOR r IN
        SELECT program_id, day, partner_id, link_id, sum(d) AS delta
        FROM (
            SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date AS day,
                COALESCE(n.partner_id, 0) AS partner_id, COALESCE(cu.link_id, 0) AS link_id, 1 AS d
            FROM new_leads n JOIN programs p ON p.id = n.program_id
            LEFT JOIN customers cu ON cu.id = n.customer_id
            WHERE NOT n.is_test AND n.settled_at IS NOT NULL
            UNION ALL
            SELECT o.program_id, (o.occurred_at AT TIME ZONE p.timezone)::date,
                COALESCE(o.partner_id, 0), COALESCE(cu.link_id, 0), -1
            FROM old_leads o JOIN programs p ON p.id = o.program_id
            LEFT JOIN customers cu ON cu.id = o.customer_id
            WHERE NOT o.is_test AND o.settled_at IS NOT NULL
        ) x
        GROUP BY 1, 2, 3, 4
        HAVING sum(d) <> 0
        ORDER BY 1, 2, 3, 4
    LOOP
        IF r.delta > 0 THEN
            INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, leads)
            VALUES (r.program_id, r.day, r.partner_id, r.link_id, r.delta)
            ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
                SET leads = rollup_traffic_daily.leads + EXCLUDED.leads;
        ELSE
            UPDATE rollup_traffic_daily SET leads = leads + r.delta
            WHERE (program_id, day, partner_id, link_id) = (r.program_id, r.day, r.partner_id, r.link_id);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_sales_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_sales ORDER BY 1) x;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, conversions, revenue_minor)
    SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(n.partner_id, 0), COALESCE(cu.link_id, 0), n.currency, count(*), sum(n.amount_cents)
    FROM new_sales n
    JOIN programs p ON p.id = n.program_id
    LEFT JOIN customers cu ON cu.id = n.customer_id
    WHERE NOT n.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET conversions = rollup_sales_daily.conversions + EXCLUDED.conversions,
            revenue_minor = rollup_sales_daily.revenue_minor + EXCLUDED.revenue_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_refunds_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_refunds ORDER BY 1) x;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, refunds, refunded_minor)
    SELECT s.program_id, (n.created_at AT TIME ZONE p.timezone)::date,
        COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0), s.currency, count(*), sum(n.amount_cents)
    FROM new_refunds n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    LEFT JOIN customers cu ON cu.id = s.customer_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET refunds = rollup_sales_daily.refunds + EXCLUDED.refunds,
            refunded_minor = rollup_sales_daily.refunded_minor + EXCLUDED.refunded_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_commissions_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_commissions ORDER BY 1) x;
    INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, commission_minor)
    SELECT s.program_id, (s.occurred_at AT TIME ZONE p.timezone)::date,
        COALESCE(s.partner_id, 0), COALESCE(cu.link_id, 0), n.currency, sum(n.amount_minor)
    FROM new_commissions n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    LEFT JOIN customers cu ON cu.id = s.customer_id
    WHERE NOT s.is_test
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
        SET commission_minor = rollup_sales_daily.commission_minor + EXCLUDED.commission_minor;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_commissions_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_commissions ORDER BY 1) x;
    FOR r IN
        SELECT s.program_id, (s.occurred_at AT TIME ZONE p.timezone)::date AS day,
            COALESCE(s.partner_id, 0) AS partner_id, COALESCE(cu.link_id, 0) AS link_id, x.currency,
            sum(x.d) AS delta
        FROM (
            SELECT n.sale_id, n.currency, n.amount_minor AS d FROM new_commissions n
            UNION ALL
            SELECT o.sale_id, o.currency, -o.amount_minor FROM old_commissions o
        ) x
        JOIN sales s ON s.id = x.sale_id
        JOIN programs p ON p.id = s.program_id
        LEFT JOIN customers cu ON cu.id = s.customer_id
        WHERE NOT s.is_test
        GROUP BY 1, 2, 3, 4, 5
        HAVING sum(x.d) <> 0
        ORDER BY 1, 2, 3, 4, 5
    LOOP
        IF r.delta > 0 THEN
            INSERT INTO rollup_sales_daily (program_id, day, partner_id, link_id, currency, commission_minor)
            VALUES (r.program_id, r.day, r.partner_id, r.link_id, r.currency, r.delta)
            ON CONFLICT (program_id, day, partner_id, link_id, currency) DO UPDATE
                SET commission_minor = rollup_sales_daily.commission_minor + EXCLUDED.commission_minor;
        ELSE
            UPDATE rollup_sales_daily SET commission_minor = commission_minor + r.delta
            WHERE (program_id, day, partner_id, link_id, currency)
                = (r.program_id, r.day, r.partner_id, r.link_id, r.currency);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP TABLE rollup_program_sales_daily;
ALTER TABLE rollup_visitors_daily DROP COLUMN leads, DROP COLUMN clicks;
