-- +goose Up
-- Pending sessions appended as one row per key and batch (issue 25). The
-- click trigger of 00025 appended one rollup_pending_sessions row per
-- distinct session of its batch: when every click is a new visitor, a
-- heap row per click, about as much as the click's own row costs in the
-- rollups. Now it appends one row per (program, day, partner, link) of
-- the batch holding the batch's distinct sessions of that key as an
-- array: a batch of one link appends one row whatever its size
-- (docs/decisions.md, "Pending sessions as sets"). The tally unnests
-- them; what it counts and when is unchanged.

ALTER TABLE rollup_pending_sessions RENAME TO rollup_pending_sessions_00025;

-- The sessions of stored clicks not tallied yet, per key and click
-- statement: a queue, appended by the click statements and emptied by
-- the tally. No key (see 00025).
CREATE TABLE rollup_pending_sessions (
    program_id  bigint NOT NULL,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL,
    link_id     bigint NOT NULL,
    session_ids text[] NOT NULL CHECK (cardinality(session_ids) > 0)
);

INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_ids)
SELECT program_id, day, partner_id, link_id, array_agg(DISTINCT session_id)
FROM rollup_pending_sessions_00025
GROUP BY 1, 2, 3, 4;

DROP TABLE rollup_pending_sessions_00025;

-- Clicks: as in 00025, with the batch's distinct sessions appended per key.
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
        INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_ids)
        SELECT program_id, day, partner_id, link_id, array_agg(DISTINCT session_id) FROM ev
        WHERE session_id IS NOT NULL
        GROUP BY 1, 2, 3, 4
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

-- rollup_tally_sessions as in 00025, over the sets: it takes whole rows
-- until it holds batch_limit sessions (the last row may take it past),
-- and returns how many sessions it took.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_tally_sessions(batch_limit int) RETURNS bigint LANGUAGE plpgsql AS $$
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
    WITH batch AS (
        DELETE FROM rollup_pending_sessions
        WHERE ctid = ANY (ARRAY(
            SELECT ctid FROM (
                SELECT ctid, sum(n) OVER (ORDER BY ctid ROWS UNBOUNDED PRECEDING) - n AS before
                FROM (SELECT ctid, cardinality(session_ids) AS n FROM rollup_pending_sessions
                    WHERE program_id = ANY (programs) LIMIT batch_limit) r
            ) w
            WHERE before < batch_limit))
        RETURNING program_id, day, partner_id, link_id, session_ids
    ), sessions AS (
        SELECT b.program_id, b.day, b.partner_id, b.link_id, s.session_id
        FROM batch b CROSS JOIN LATERAL unnest(b.session_ids) AS s(session_id)
    ), seen AS (
        INSERT INTO rollup_sessions (program_id, day, partner_id, link_id, session_id)
        SELECT DISTINCT program_id, day, partner_id, link_id, session_id FROM (
            SELECT program_id, day, partner_id, link_id, session_id FROM sessions
            UNION ALL
            SELECT program_id, day, -1, -1, session_id FROM sessions
        ) s
        ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING
        RETURNING program_id, day, partner_id, link_id
    ), counted AS (
        SELECT program_id, day, partner_id, link_id, count(*) AS n FROM seen GROUP BY 1, 2, 3, 4
    )
    SELECT (SELECT count(*) FROM sessions), array_agg(program_id), array_agg(day), array_agg(partner_id),
        array_agg(link_id), array_agg(n)
    INTO tallied, k_prog, k_day, k_part, k_link, k_new
    FROM counted;
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
-- The table, trigger and tally of 00025 back, the pending sets unnested.
ALTER TABLE rollup_pending_sessions RENAME TO rollup_pending_sessions_00027;

CREATE TABLE rollup_pending_sessions (
    program_id  bigint NOT NULL,
    day         date   NOT NULL,
    partner_id  bigint NOT NULL,
    link_id     bigint NOT NULL,
    session_id  text   NOT NULL
);

INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_id)
SELECT p.program_id, p.day, p.partner_id, p.link_id, s.session_id
FROM rollup_pending_sessions_00027 p CROSS JOIN LATERAL unnest(p.session_ids) AS s(session_id);

DROP TABLE rollup_pending_sessions_00027;

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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_tally_sessions(batch_limit int) RETURNS bigint LANGUAGE plpgsql AS $$
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
