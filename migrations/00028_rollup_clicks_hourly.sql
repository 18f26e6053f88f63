-- +goose Up
-- The program's real clicks per UTC hour (issue 29). The readiness
-- checklist and the CLI status count the clicks of the last 24 hours
-- exactly (`counts_24h`); on a program of 200,000 clicks a day that count
-- read 200,000 index entries, about 40 ms, and made the dashboard's
-- overview page the slowest read of `make bench` (docs/decisions.md,
-- "The last 24 hours from hourly counts"). The click trigger now also
-- adds the batch's clicks to their hour's row, in the clicks' own
-- transaction and from the rows the statement stored, like every other
-- counter; the 24-hour count reads the whole hours from these rows and
-- only the two partial hours at the window's ends (one hour together)
-- from clicks. Only recent hours are read, so rows older than 48 hours
-- are pruned (ledger.ClickHoursKept) and verified no further back.

CREATE TABLE rollup_clicks_hourly (
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    hour        timestamptz NOT NULL CHECK (hour = date_trunc('hour', hour, 'UTC')),
    clicks      bigint      NOT NULL DEFAULT 0 CHECK (clicks >= 0),
    PRIMARY KEY (program_id, hour)
);

INSERT INTO rollup_clicks_hourly (program_id, hour, clicks)
SELECT program_id, date_trunc('hour', occurred_at, 'UTC'), count(*)
FROM clicks
WHERE NOT is_test AND occurred_at >= date_trunc('hour', now(), 'UTC') - interval '48 hours'
GROUP BY 1, 2;

-- Clicks: as in 00027, with the batch's clicks per hour.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION rollup_clicks_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(17, (x.program_id & 2147483647)::int)
    FROM (SELECT DISTINCT program_id FROM new_clicks ORDER BY 1) x;
    WITH ev AS (
        SELECT n.program_id, (n.occurred_at AT TIME ZONE p.timezone)::date AS day,
            COALESCE(n.partner_id, 0) AS partner_id, COALESCE(n.link_id, 0) AS link_id, n.session_id,
            date_trunc('hour', n.occurred_at, 'UTC') AS hour
        FROM new_clicks n JOIN programs p ON p.id = n.program_id
        WHERE NOT n.is_test
    ), staged AS (
        INSERT INTO rollup_pending_sessions (program_id, day, partner_id, link_id, session_ids)
        SELECT program_id, day, partner_id, link_id, array_agg(DISTINCT session_id) FROM ev
        WHERE session_id IS NOT NULL
        GROUP BY 1, 2, 3, 4
    ), hourly AS (
        -- 00028: the program's clicks per UTC hour.
        INSERT INTO rollup_clicks_hourly (program_id, hour, clicks)
        SELECT program_id, hour, count(*) FROM ev
        GROUP BY 1, 2
        ORDER BY 1, 2
        ON CONFLICT (program_id, hour) DO UPDATE
            SET clicks = rollup_clicks_hourly.clicks + EXCLUDED.clicks
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

-- +goose Down
-- The click trigger of 00027 back.
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

DROP TABLE rollup_clicks_hourly;
