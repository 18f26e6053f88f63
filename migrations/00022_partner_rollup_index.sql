-- +goose Up
-- A program's partner list (the brand's partners page) reads each
-- partner's clicks and leads from the daily rollups; without this index
-- each partner of the page scans every rollup row of the program. Rows
-- are inserted once per day, partner and link (later clicks update them),
-- so the index costs the click path little.
CREATE INDEX rollup_traffic_daily_partner_idx ON rollup_traffic_daily (program_id, partner_id);

-- +goose Down
DROP INDEX rollup_traffic_daily_partner_idx;
