-- +goose Up
-- Rollup triggers that return at once when their statement changed no
-- row (issue 29). A statement-level trigger fires whether or not its
-- statement changed rows, and the sale and refund writes are single
-- statements whose CTEs update leads and insert or update commissions
-- for every batch: a batch without a converted lead or a commission paid
-- about 0.1 ms per empty trigger for its lock, its grouped reads and its
-- upserts over nothing (docs/decisions.md, "Empty rollup triggers").
-- The functions are those of 00023 (commissions) and 00024 (leads),
-- each with the one test added first; what they do with rows is
-- unchanged. The other rollup triggers (clicks, lead inserts, sales,
-- refunds) fire on statements that always store rows.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_leads_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT FROM new_leads) THEN
        RETURN NULL;
    END IF;
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
CREATE OR REPLACE FUNCTION rollup_commissions_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM new_commissions) THEN
        RETURN NULL;
    END IF;
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_commissions_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT FROM new_commissions) THEN
        RETURN NULL;
    END IF;
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
-- The functions of 00023 and 00024 back, verbatim.
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
