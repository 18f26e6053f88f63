-- +goose Up
-- The active partners of a program's day (issue 25), so the performance
-- endpoint's `partners` reads one row per partner and day instead of
-- every per-link rollup row of the window. A partner (id <> 0) is active
-- on a day when it has a real click, a settled real lead or a real sale
-- on that day, or a refund of a real sale created that day: exactly the
-- partners with a non-zero counter in the per-link rows of the day, which
-- `partnerctl analytics verify` recomputes from the raw tables.
--
-- The set is kept by the triggers that write the per-link rows, in the
-- same statements, with INSERT ... ON CONFLICT DO NOTHING: an event adds
-- its partner's day at most once, and a redelivered click batch (whose
-- transition table is empty) adds nothing. Replaced here, each by adding
-- the set's insert and nothing else: rollup_clicks_insert,
-- rollup_leads_insert, rollup_leads_update, rollup_sales_insert,
-- rollup_refunds_insert (commissions only exist for a sale, whose day
-- the sale already made active). Lock order: the advisory lock (17,
-- program), the program rows, then the set, then the per-link rows, each
-- in key order. In the click statement the set's CTE comes after the
-- traffic CTE: Postgres finishes unreferenced data-modifying CTEs after
-- the main query, the last written first. An insert into the set waits
-- only for another transaction inserting the same key, uncommitted: the
-- first event of a partner's day in both.
--
-- No foreign key to programs, for the reason of migration 00017 (the
-- click batches write it).

-- Writers in flight finish before the backfill reads the per-link rows;
-- new ones wait for the new triggers.
LOCK TABLE rollup_traffic_daily, rollup_sales_daily, rollup_visitors_daily, rollup_program_sales_daily, rollup_sessions
    IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE rollup_partners_daily (
    program_id  bigint NOT NULL,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL CHECK (partner_id <> 0),
    PRIMARY KEY (program_id, day, partner_id)
);

INSERT INTO rollup_partners_daily (program_id, day, partner_id)
SELECT program_id, day, partner_id FROM rollup_traffic_daily
WHERE partner_id <> 0 AND (clicks <> 0 OR visitors <> 0 OR leads <> 0)
UNION
SELECT program_id, day, partner_id FROM rollup_sales_daily
WHERE partner_id <> 0
    AND (conversions <> 0 OR revenue_minor <> 0 OR commission_minor <> 0 OR refunds <> 0 OR refunded_minor <> 0);

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
    ), partners AS (
        -- 00024: the day's active partners (see the header).
        INSERT INTO rollup_partners_daily (program_id, day, partner_id)
        SELECT DISTINCT program_id, day, partner_id FROM ev WHERE partner_id <> 0
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING
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
    -- 00024: the day's active partners.
    INSERT INTO rollup_partners_daily (program_id, day, partner_id)
    SELECT DISTINCT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date, n.partner_id
    FROM new_leads n
    JOIN programs p ON p.id = n.program_id
    WHERE NOT n.is_test AND n.settled_at IS NOT NULL AND COALESCE(n.partner_id, 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING;
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
        SELECT 1, program_id, day, partner_id, 0, sum(d)
        FROM d WHERE partner_id <> 0 GROUP BY 2, 3, 4 HAVING sum(d) > 0
        UNION ALL
        SELECT 2, program_id, day, partner_id, link_id, sum(d)
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
        ELSIF r.level = 1 THEN
            INSERT INTO rollup_partners_daily (program_id, day, partner_id)
            VALUES (r.program_id, r.day, r.partner_id)
            ON CONFLICT DO NOTHING;
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
    -- A partner's day whose settled leads left it (a settlement undone or
    -- re-keyed: no write path does either) leaves the set when none of its
    -- per-link rows of the day counts anything any more.
    DELETE FROM rollup_partners_daily ap
    USING (
        SELECT o.program_id, (o.occurred_at AT TIME ZONE p.timezone)::date AS day, o.partner_id
        FROM old_leads o JOIN programs p ON p.id = o.program_id
        WHERE NOT o.is_test AND o.settled_at IS NOT NULL AND COALESCE(o.partner_id, 0) <> 0
        EXCEPT
        SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date, n.partner_id
        FROM new_leads n JOIN programs p ON p.id = n.program_id
        WHERE NOT n.is_test AND n.settled_at IS NOT NULL AND COALESCE(n.partner_id, 0) <> 0
    ) x
    WHERE (ap.program_id, ap.day, ap.partner_id) = (x.program_id, x.day, x.partner_id)
        AND NOT EXISTS (SELECT 1 FROM rollup_traffic_daily t
            WHERE (t.program_id, t.day, t.partner_id) = (x.program_id, x.day, x.partner_id)
                AND (t.clicks <> 0 OR t.visitors <> 0 OR t.leads <> 0))
        AND NOT EXISTS (SELECT 1 FROM rollup_sales_daily s
            WHERE (s.program_id, s.day, s.partner_id) = (x.program_id, x.day, x.partner_id)
                AND (s.conversions <> 0 OR s.revenue_minor <> 0 OR s.commission_minor <> 0 OR s.refunds <> 0
                    OR s.refunded_minor <> 0));
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
    -- 00024: the day's active partners.
    INSERT INTO rollup_partners_daily (program_id, day, partner_id)
    SELECT DISTINCT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date, n.partner_id
    FROM new_sales n
    JOIN programs p ON p.id = n.program_id
    WHERE NOT n.is_test AND COALESCE(n.partner_id, 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING;
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
    -- 00024: the refund's day's active partners.
    INSERT INTO rollup_partners_daily (program_id, day, partner_id)
    SELECT DISTINCT s.program_id, (n.created_at AT TIME ZONE p.timezone)::date, s.partner_id
    FROM new_refunds n
    JOIN sales s ON s.id = n.sale_id
    JOIN programs p ON p.id = s.program_id
    WHERE NOT s.is_test AND COALESCE(s.partner_id, 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING;
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

-- +goose Down
-- The functions of migration 00023, unchanged.
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

DROP TABLE rollup_partners_daily;
