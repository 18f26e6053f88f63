-- +goose Up
-- Unique visitors counted by a tally (issue 25). Until now the click
-- statement's trigger inserted two rollup_sessions rows per click of a new
-- session (the partner's and link's, and the program's) and counted the
-- new ones as visitors, in the click batch's transaction: that doubled
-- the cost of storing a click when every click is a new visitor
-- (docs/decisions.md, "Unique visitors by a tally"). Now the trigger only
-- appends the batch's distinct sessions to rollup_pending_sessions (no
-- index, no key to check), still in the clicks' own transaction and from
-- the rows the statement stored, so a redelivered batch appends nothing;
-- rollup_tally_sessions, run by the worker every few seconds, moves
-- pending rows into rollup_sessions and counts the new ones as visitors,
-- deleting the pending rows in the same transaction, so each session is
-- counted exactly once. Clicks and leads are counted as before; only
-- the visitors lag, by the tally's interval.

-- The sessions of stored clicks not tallied yet: a queue, appended by
-- the click statements and emptied by the tally. No primary key and no
-- foreign key (each would make the append cost what it saves).
CREATE TABLE rollup_pending_sessions (
    program_id  bigint NOT NULL,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL,
    link_id     bigint NOT NULL,
    session_id  text   NOT NULL
);

-- Clicks: the counters and the active partners of 00024, and the batch's
-- distinct sessions appended to the pending ones. Program rows, then the
-- partners' set, then per-link rows, as in 00024 (the main query runs
-- first, then the unreferenced CTEs, the last written first).
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
    ), staged AS (
        INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_id)
        SELECT DISTINCT program_id, day, partner_id, link_id, session_id FROM ev WHERE session_id IS NOT NULL
    ), traffic AS (
        INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, clicks)
        SELECT program_id, day, partner_id, link_id, count(*) FROM ev
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
            SET clicks = rollup_traffic_daily.clicks + EXCLUDED.clicks
    ), partners AS (
        -- 00024: the day's active partners.
        INSERT INTO rollup_partners_daily (program_id, day, partner_id)
        SELECT DISTINCT program_id, day, partner_id FROM ev WHERE partner_id <> 0
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING
    )
    INSERT INTO rollup_visitors_daily (program_id, day, clicks)
    SELECT program_id, day, count(*) FROM ev
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (program_id, day) DO UPDATE
        SET clicks = rollup_visitors_daily.clicks + EXCLUDED.clicks;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- rollup_tally_sessions tallies up to batch_limit pending sessions and
-- returns how many it took. It takes the shared rollup lock (17, program)
-- of their programs first, as the triggers do, so a rebuild (which takes
-- it exclusively and deletes the program's pending rows) never sees a
-- half-tallied program. Concurrent tallies do not take a row twice: the
-- second one's DELETE waits for the first and skips what it deleted.
-- +goose StatementBegin
CREATE FUNCTION rollup_tally_sessions(batch_limit int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    programs bigint[];
    tallied  bigint;
    k_prog   bigint[];
    k_day    date[];
    k_part   bigint[];
    k_link   bigint[];
    k_new    bigint[];
BEGIN
    SELECT array_agg(DISTINCT program_id ORDER BY program_id) INTO programs
    FROM (SELECT program_id FROM rollup_pending_sessions LIMIT batch_limit) p;
    IF programs IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(17, (x.id & 2147483647)::int)
    FROM (SELECT id FROM unnest(programs) id ORDER BY 1) x;
    -- The batch's sessions (each key's, and the program's as -1, -1) go
    -- into the set in key order; the ones it did not hold yet are the
    -- new visitors, counted per key.
    WITH batch AS (
        DELETE FROM rollup_pending_sessions
        WHERE ctid = ANY (ARRAY(
            SELECT ctid FROM rollup_pending_sessions WHERE program_id = ANY (programs) LIMIT batch_limit))
        RETURNING program_id, day, partner_id, link_id, session_id
    ), seen AS (
        INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
        SELECT DISTINCT program_id, day, partner_id, link_id, session_id FROM (
            SELECT program_id, day, partner_id, link_id, session_id FROM batch
            UNION ALL
            SELECT program_id, day, -1, -1, session_id FROM batch
        ) s
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING
        RETURNING program_id, day, partner_id, link_id
    ), counted AS (
        SELECT program_id, day, partner_id, link_id, count(*) AS n FROM seen GROUP BY 1, 2, 3, 4
    )
    SELECT (SELECT count(*) FROM batch), array_agg(program_id), array_agg(day), array_agg(partner_id),
        array_agg(link_id), array_agg(n)
    INTO tallied, k_prog, k_day, k_part, k_link, k_new
    FROM counted;
    -- Program rows, then per-link rows, each in key order: the order of
    -- every other writer of these rows.
    INSERT INTO rollup_visitors_daily (program_id, day, visitors)
    SELECT p, d, n FROM unnest(k_prog, k_day, k_part, k_link, k_new) AS u(p, d, pa, l, n)
    WHERE pa = -1
    ORDER BY 1, 2
    ON CONFLICT (program_id, day) DO UPDATE
        SET visitors = rollup_visitors_daily.visitors + EXCLUDED.visitors;
    INSERT INTO rollup_traffic_daily (program_id, day, partner_id, link_id, visitors)
    SELECT p, d, pa, l, n FROM unnest(k_prog, k_day, k_part, k_link, k_new) AS u(p, d, pa, l, n)
    WHERE pa >= 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (program_id, day, partner_id, link_id) DO UPDATE
        SET visitors = rollup_traffic_daily.visitors + EXCLUDED.visitors;
    RETURN tallied;
END $$;
-- +goose StatementEnd

-- +goose Down
-- The click trigger of 00024 back, then every pending session tallied.
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
DO $$
BEGIN
    WHILE rollup_tally_sessions(100000) > 0 LOOP
    END LOOP;
END $$;
-- +goose StatementEnd
DROP FUNCTION rollup_tally_sessions(int);
DROP TABLE rollup_pending_sessions;
