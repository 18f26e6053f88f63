-- +goose Up
-- The CLI's synthetic verification chain runs a click, a lead and a sale
-- through the real tracking code with a test partner and a test link of
-- the program (the fixture). The fixture partner is flagged so it is never
-- counted, listed or paid; its link is a test link (links.is_test), so its
-- clicks, customers, leads and sales are test events.
ALTER TABLE partners ADD COLUMN is_test boolean NOT NULL DEFAULT false;

-- One row per synthetic chain run: what each step produced and the verdict
-- readiness reports as the live gate's test_chain.
CREATE TABLE synthetic_chains (
    id              bigserial PRIMARY KEY,
    program_id      bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    link_id         bigint      REFERENCES links (id) ON DELETE SET NULL,
    short_code      text        NOT NULL,
    customer_key    text        NOT NULL,
    click_id        text,
    lead_id         bigint,
    sale_id         bigint,
    transaction_id  text,
    click_verdict   text        NOT NULL CHECK (click_verdict IN ('attributed', 'unattributed', 'wrong_partner', 'pending')),
    lead_verdict    text        NOT NULL CHECK (lead_verdict IN ('attributed', 'unattributed', 'wrong_partner', 'pending')),
    sale_verdict    text        NOT NULL CHECK (sale_verdict IN ('attributed', 'unattributed', 'wrong_partner', 'pending')),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX synthetic_chains_program_idx ON synthetic_chains (program_id, created_at DESC);

-- +goose Down
DROP TABLE synthetic_chains;
ALTER TABLE partners DROP COLUMN is_test;
