-- +goose Up
-- The rollups of migration 00016 are kept by statement-level AFTER
-- triggers on the raw tables, so every write path (the click worker's
-- batches, lead settlement, sales from the API and the processor,
-- refunds, commission changes) moves them in its own transaction and
-- without a round trip more. A trigger reads the transition table: the
-- rows the statement really stored, so a click batch redelivered with
-- ON CONFLICT DO NOTHING adds nothing. Each upsert sorts its rows by the
-- rollup key, so concurrent writers lock rollup rows in one order and
-- cannot deadlock on them. Each trigger first takes the shared advisory
-- lock (17, program id) of the programs it writes for: a rebuild takes it
-- exclusively, so it waits for the writers in flight and holds new ones
-- back while it recomputes (rollup.go). A program's day is (t AT TIME ZONE
-- programs.timezone)::date; test rows (is_test) never count. The
-- definitions are those of `partnerctl analytics verify` (ledger/postgres
-- rollup.go), which recomputes the same counters from the raw tables.

-- The rollups the click batches write carry no foreign key to programs,
-- for the reason migration 00010 dropped the clicks' own: every row
-- inserted would take a FOR KEY SHARE lock on the program's row, which
-- the concurrent batches of a busy program all share (multixacts). The
-- service deletes no program; the triggers join programs, so no row is
-- written for a program that is gone.
ALTER TABLE rollup_sessions DROP CONSTRAINT rollup_sessions_program_id_fkey;
ALTER TABLE rollup_traffic_daily DROP CONSTRAINT rollup_traffic_daily_program_id_fkey;
ALTER TABLE rollup_visitors_daily DROP CONSTRAINT rollup_visitors_daily_program_id_fkey;

-- Clicks: the clicks stored, the new sessions of each partner and link
-- (visitors) and of the program (rollup_visitors_daily), by the click's day.
-- +goose StatementBegin
CREATE FUNCTION rollup_clicks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER clicks_rollup AFTER INSERT ON clicks
    REFERENCING NEW TABLE AS new_clicks
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_clicks_insert();

-- Leads count once settled, on the lead's day, by its partner and its
-- customer's link. An insert adds the settled ones; an update moves each
-- key by what its rows count now less what they counted before (in
-- practice: settled_at set on a provisional lead), one key at a time in
-- key order. A negative delta only ever meets a row that counted it, and
-- is an UPDATE: an upsert cannot carry it (the CHECK sees the proposed
-- row).
-- +goose StatementBegin
CREATE FUNCTION rollup_leads_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE FUNCTION rollup_leads_update() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER leads_rollup_insert AFTER INSERT ON leads
    REFERENCING NEW TABLE AS new_leads
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_leads_insert();
CREATE TRIGGER leads_rollup_update AFTER UPDATE ON leads
    REFERENCING OLD TABLE AS old_leads NEW TABLE AS new_leads
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_leads_update();

-- Sales: conversions and revenue (amount_cents) on the sale's day, by its
-- partner and its customer's link, in its currency. No column a counter
-- reads changes after the insert (refunds are their own rows), so sales
-- need no update trigger.
-- +goose StatementBegin
CREATE FUNCTION rollup_sales_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER sales_rollup AFTER INSERT ON sales
    REFERENCING NEW TABLE AS new_sales
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sales_insert();

-- Refunds of real sales: count and amount on the refund's day, under the
-- sale's partner, link and currency.
-- +goose StatementBegin
CREATE FUNCTION rollup_refunds_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER refunds_rollup AFTER INSERT ON refunds
    REFERENCING NEW TABLE AS new_refunds
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_refunds_insert();

-- Commissions: the current amount_minor of a real sale's commission, on
-- the sale's day under the sale's partner and link, in the commission's
-- currency. An update (refund, reversal, rejection) moves the row by the
-- new amount less the old; an approval or payment changes no amount and
-- touches no rollup row.
-- +goose StatementBegin
CREATE FUNCTION rollup_commissions_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE FUNCTION rollup_commissions_update() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER commissions_rollup_insert AFTER INSERT ON commissions
    REFERENCING NEW TABLE AS new_commissions
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_commissions_insert();
CREATE TRIGGER commissions_rollup_update AFTER UPDATE ON commissions
    REFERENCING OLD TABLE AS old_commissions NEW TABLE AS new_commissions
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_commissions_update();

-- +goose Down
DROP TRIGGER commissions_rollup_update ON commissions;
DROP TRIGGER commissions_rollup_insert ON commissions;
DROP TRIGGER refunds_rollup ON refunds;
DROP TRIGGER sales_rollup ON sales;
DROP TRIGGER leads_rollup_update ON leads;
DROP TRIGGER leads_rollup_insert ON leads;
DROP TRIGGER clicks_rollup ON clicks;
DROP FUNCTION rollup_commissions_update();
DROP FUNCTION rollup_commissions_insert();
DROP FUNCTION rollup_refunds_insert();
DROP FUNCTION rollup_sales_insert();
DROP FUNCTION rollup_leads_update();
DROP FUNCTION rollup_leads_insert();
DROP FUNCTION rollup_clicks_insert();
ALTER TABLE rollup_visitors_daily ADD CONSTRAINT rollup_visitors_daily_program_id_fkey
    FOREIGN KEY (program_id) REFERENCES programs (id) ON DELETE CASCADE;
ALTER TABLE rollup_traffic_daily ADD CONSTRAINT rollup_traffic_daily_program_id_fkey
    FOREIGN KEY (program_id) REFERENCES programs (id) ON DELETE CASCADE;
ALTER TABLE rollup_sessions ADD CONSTRAINT rollup_sessions_program_id_fkey
    FOREIGN KEY (program_id) REFERENCES programs (id) ON DELETE CASCADE;
