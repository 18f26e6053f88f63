-- +goose Up
-- Lookups of the commission ledger. A sale asks whether its customer
-- already earned a commission (non-recurring programs pay the first sale
-- only); the foreign key from commissions to customers had no index.
CREATE INDEX commissions_customer_id_idx ON commissions (customer_id) WHERE customer_id IS NOT NULL;

-- A refund without refund_id looks for the same amount already applied on
-- its sale.
CREATE INDEX refunds_sale_amount_idx ON refunds (sale_id, amount_cents);
DROP INDEX refunds_sale_id_idx;

-- +goose Down
CREATE INDEX refunds_sale_id_idx ON refunds (sale_id);
DROP INDEX refunds_sale_amount_idx;
DROP INDEX commissions_customer_id_idx;
