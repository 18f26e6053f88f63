-- +goose Up
-- A customer has at most one lead: a browser-mode lead that waits to settle
-- is settled in place (the same row), and a customer already at lead or a
-- later funnel stage refuses another lead. The lead service serialises on
-- the customer row; this index makes a second lead impossible whatever
-- path writes it. Test-mode leads move no customer and have none.
CREATE UNIQUE INDEX leads_customer_id_key ON leads (customer_id) WHERE customer_id IS NOT NULL;

-- +goose Down
DROP INDEX leads_customer_id_key;
