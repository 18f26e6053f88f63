-- +goose Up
-- The rollup triggers of sales, refunds, commissions and leads join the
-- rows their statement wrote to sales, customers and programs by primary
-- key, a handful of rows a statement (issue 29). PL/pgSQL plans each of
-- their statements once per connection and keeps the plan until the
-- tables' statistics change; a plan made while `sales` was small (a new
-- database, or a server whose autovacuum is off or has not caught up)
-- joined by hashing a scan of the whole table, and kept scanning it as
-- it grew: at 40,000 sales each commission insert read all of them twice,
-- about 20 ms, and the first sales of the bench's fixed-rate phase,
-- which pay commissions, answered in 40-130 ms (docs/decisions.md,
-- "Stale rollup plans"). Without scans of whole tables, hash joins and
-- merge joins (Postgres falls back on a scan only where no index serves)
-- the only plans left look each row up by its key, whatever the
-- statistics say; what the functions do is unchanged.
ALTER FUNCTION rollup_sales_insert() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION rollup_refunds_insert() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION rollup_commissions_insert() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION rollup_commissions_update() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION rollup_leads_insert() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;
ALTER FUNCTION rollup_leads_update() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off;

-- +goose Down
ALTER FUNCTION rollup_sales_insert() RESET ALL;
ALTER FUNCTION rollup_refunds_insert() RESET ALL;
ALTER FUNCTION rollup_commissions_insert() RESET ALL;
ALTER FUNCTION rollup_commissions_update() RESET ALL;
ALTER FUNCTION rollup_leads_insert() RESET ALL;
ALTER FUNCTION rollup_leads_update() RESET ALL;
