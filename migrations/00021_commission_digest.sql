-- +goose Up
-- The daily commission digest (issue 26) reads one UTC day of commissions
-- by their creation time; without this index each run scans them all.
CREATE INDEX commissions_created_at_idx ON commissions (created_at);

-- +goose Down
DROP INDEX commissions_created_at_idx;
