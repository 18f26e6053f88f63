-- +goose Up
-- Payment-processor events (issue 6).
--
-- The outcome of each stored event: what it did (or why it did nothing),
-- the customer it was attributed to (a retry settles that customer's
-- provisional lead again, idempotently), the sale it recorded or refunded,
-- and the subscription it belongs to: a subscription checkout that
-- attributes its customer revisits that subscription's invoices skipped
-- for want of attribution.
ALTER TABLE processor_events
    ADD COLUMN outcome          text,
    ADD COLUMN customer_id      bigint REFERENCES customers (id) ON DELETE SET NULL,
    ADD COLUMN sale_id          bigint REFERENCES sales (id) ON DELETE SET NULL,
    ADD COLUMN subscription_id  text;
CREATE INDEX processor_events_skipped_subscription_idx ON processor_events (program_id, subscription_id)
    WHERE status = 'skipped' AND subscription_id IS NOT NULL;

-- Which payment paid which invoice. Current Stripe API versions name an
-- invoice's payment only in invoice_payment.paid events, not on the
-- invoice; a refund of that payment finds the invoice's sale through here.
CREATE TABLE processor_invoice_payments (
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    invoice_id  text        NOT NULL,
    payment_id  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (program_id, invoice_id, payment_id)
);
CREATE INDEX processor_invoice_payments_payment_idx ON processor_invoice_payments (program_id, payment_id);

-- A processor refund finds its sale by the payment that paid it.
CREATE INDEX sales_provider_payment_idx ON sales (program_id, provider_payment_id)
    WHERE provider_payment_id IS NOT NULL;

-- Attribution by the buyer's email also looks at leads still provisional,
-- whose email reaches the customer only when they settle.
CREATE INDEX leads_program_email_idx ON leads (program_id, lower(email)) WHERE email IS NOT NULL;

-- +goose Down
DROP INDEX leads_program_email_idx;
DROP INDEX sales_provider_payment_idx;
DROP TABLE processor_invoice_payments;
DROP INDEX processor_events_skipped_subscription_idx;
ALTER TABLE processor_events
    DROP COLUMN subscription_id,
    DROP COLUMN sale_id,
    DROP COLUMN customer_id,
    DROP COLUMN outcome;
