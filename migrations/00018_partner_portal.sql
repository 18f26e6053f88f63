-- +goose Up
-- The partner portal (issue 26): partners sign in, see their programs,
-- links, numbers and money, store a payout method, and are paid by the
-- brand in payouts; a brand can embed a referral widget in its own app.

-- A partner's sign-in: the provider's issuer and subject, bound at first
-- sign-in to the partner row of the id_token's verified email (partners
-- are keyed by email, as users are). Distinct from users: a person who is
-- both a brand member and a partner has two accounts and two sessions, and
-- neither session opens the other's routes.
CREATE TABLE partner_accounts (
    id            bigserial   PRIMARY KEY,
    partner_id    bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    oidc_issuer   text        NOT NULL,
    oidc_subject  text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT partner_accounts_partner_id_key UNIQUE (partner_id),
    CONSTRAINT partner_accounts_identity_key UNIQUE (oidc_issuer, oidc_subject)
);

-- Partner session tokens; only the SHA-256 of a token is stored.
CREATE TABLE partner_sessions (
    id          bigserial   PRIMARY KEY,
    account_id  bigint      NOT NULL REFERENCES partner_accounts (id) ON DELETE CASCADE,
    token_hash  bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    CONSTRAINT partner_sessions_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX partner_sessions_account_id_idx ON partner_sessions (account_id);

-- Program settings of the portal: whether partners may make links with a
-- code of their own, and the smallest balance a payout is made for, in
-- major units of the program currency (exact; VND has no minor unit).
ALTER TABLE programs ADD COLUMN partner_links boolean NOT NULL DEFAULT false;
ALTER TABLE programs ADD COLUMN minimum_payout numeric NOT NULL DEFAULT 50
    CHECK (minimum_payout >= 0 AND minimum_payout <= 1000000000000);

-- A payout: money of one program, one partner and one currency moved out
-- of the partner's balance at creation (a 'payout' entry) and paid by the
-- brand outside the service. pending -> processing -> paid, or failed from
-- pending or processing (a 'payout_return' entry gives the money back).
-- requested_by tells a brand's payout from one the partner asked for.
CREATE TABLE payouts (
    id                  bigserial   PRIMARY KEY,
    program_id          bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    partner_id          bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    currency            text        NOT NULL CHECK (currency IN ('USD', 'EUR', 'VND')),
    amount_minor        bigint      NOT NULL CHECK (amount_minor > 0),
    status              text        NOT NULL DEFAULT 'pending'
                                    CHECK (status IN ('pending', 'processing', 'paid', 'failed')),
    requested_by        text        NOT NULL CHECK (requested_by IN ('brand', 'partner')),
    created_by          bigint      REFERENCES users (id) ON DELETE SET NULL,
    external_reference  text        CHECK (length(external_reference) BETWEEN 1 AND 200),
    failure_reason      text        CHECK (length(failure_reason) BETWEEN 1 AND 500),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    processing_at       timestamptz,
    paid_at             timestamptz,
    failed_at           timestamptz
);
CREATE INDEX payouts_program_idx ON payouts (program_id, status, id);
CREATE INDEX payouts_partner_idx ON payouts (partner_id, id);

-- Balance entries name their program, so a brand pays only what its own
-- program owes: credits and deductions the program of their commission,
-- payouts and their returns their payout's; each writer names it.
-- Entries written before this migration get theirs from their commission;
-- a paid operator withdrawal's payout entry is spread over the programs
-- below.
ALTER TABLE balance_entries ADD COLUMN program_id bigint REFERENCES programs (id) ON DELETE SET NULL;
ALTER TABLE balance_entries ADD COLUMN payout_id bigint REFERENCES payouts (id) ON DELETE SET NULL;
ALTER TABLE balance_entries DROP CONSTRAINT balance_entries_sign_check;
ALTER TABLE balance_entries ADD CONSTRAINT balance_entries_sign_check CHECK (
    (kind IN ('credit', 'payout_return') AND amount_minor > 0)
    OR (kind IN ('deduction', 'payout') AND amount_minor < 0));
ALTER TABLE balance_entries DROP CONSTRAINT balance_entries_kind_check;
ALTER TABLE balance_entries ADD CONSTRAINT balance_entries_kind_check
    CHECK (kind IN ('credit', 'deduction', 'payout', 'payout_return'));
UPDATE balance_entries b SET program_id = cm.program_id
    FROM commissions cm WHERE cm.id = b.commission_id AND b.program_id IS NULL;
-- A paid operator withdrawal's payout entry has no commission: it is
-- spread over the partner's programs as payWithdrawalEntries spreads new
-- ones (ledger.SplitWithdrawal): programs in the order they were first
-- credited, never more than a program held before the entry; what no
-- program held stays without one. Otherwise a program would still count
-- money already paid out, and a brand could pay it a second time.
-- +goose StatementBegin
DO $$
DECLARE
    e record;
    p record;
    left_minor bigint;
    take bigint;
BEGIN
    FOR e IN SELECT * FROM balance_entries WHERE kind = 'payout' AND program_id IS NULL ORDER BY id LOOP
        left_minor := -e.amount_minor;
        FOR p IN
            SELECT program_id, SUM(amount_minor) AS balance FROM balance_entries
            WHERE partner_id = e.partner_id AND currency = e.currency AND program_id IS NOT NULL AND id < e.id
            GROUP BY program_id ORDER BY MIN(id)
        LOOP
            EXIT WHEN left_minor = 0;
            take := LEAST(left_minor, GREATEST(p.balance, 0));
            CONTINUE WHEN take = 0;
            INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, withdrawal_id, program_id, created_at)
                VALUES (e.partner_id, e.currency, 'payout', -take, e.withdrawal_id, p.program_id, e.created_at);
            left_minor := left_minor - take;
        END LOOP;
        IF left_minor < -e.amount_minor THEN
            IF left_minor > 0 THEN
                INSERT INTO balance_entries (partner_id, currency, kind, amount_minor, withdrawal_id, created_at)
                    VALUES (e.partner_id, e.currency, 'payout', -left_minor, e.withdrawal_id, e.created_at);
            END IF;
            DELETE FROM balance_entries WHERE id = e.id;
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd
-- Every writer names the program from now on (appendEntry and the
-- refund statement); the check holds new rows to it. NOT VALID: rows
-- older than this migration whose commission was deleted keep none.
ALTER TABLE balance_entries ADD CONSTRAINT balance_entries_program_check
    CHECK (program_id IS NOT NULL OR (kind = 'payout' AND commission_id IS NULL)) NOT VALID;
CREATE INDEX balance_entries_program_idx ON balance_entries (program_id, partner_id, currency)
    WHERE program_id IS NOT NULL;
CREATE INDEX balance_entries_payout_id_idx ON balance_entries (payout_id) WHERE payout_id IS NOT NULL;

-- The payout that paid a commission out.
ALTER TABLE commissions ADD COLUMN payout_id bigint REFERENCES payouts (id) ON DELETE SET NULL;
CREATE INDEX commissions_payout_id_idx ON commissions (payout_id) WHERE payout_id IS NOT NULL;

-- A partner's payout method: the details sealed with SECRETS_KEY (package
-- ledger/secretbox), and a masked copy to show back.
CREATE TABLE payout_methods (
    partner_id  bigint      PRIMARY KEY REFERENCES partners (id) ON DELETE CASCADE,
    method      text        NOT NULL CHECK (method IN ('bank_transfer', 'paypal', 'wise')),
    sealed      text        NOT NULL CHECK (sealed LIKE 'enc:%'),
    masked      jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Short-lived tokens of the embedded referral widget: one of the brand's
-- own users (by email) in one program. Only the SHA-256 is stored.
CREATE TABLE embed_tokens (
    token_hash  bytea       PRIMARY KEY,
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    email       text        NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
    name        text        CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX embed_tokens_expires_at_idx ON embed_tokens (expires_at);

-- The daily digest of commissions earned: one row per partner and day
-- (UTC) digested, written in the transaction that queues the email, so a
-- partner gets at most one digest a day.
CREATE TABLE commission_digests (
    partner_id  bigint      NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    day         date        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partner_id, day)
);

-- +goose Down
DROP TABLE commission_digests;
DROP TABLE embed_tokens;
DROP TABLE payout_methods;
DROP INDEX commissions_payout_id_idx;
ALTER TABLE commissions DROP COLUMN payout_id;
ALTER TABLE balance_entries DROP CONSTRAINT balance_entries_program_check;
DELETE FROM balance_entries WHERE kind = 'payout_return';
ALTER TABLE balance_entries DROP CONSTRAINT balance_entries_kind_check;
ALTER TABLE balance_entries ADD CONSTRAINT balance_entries_kind_check
    CHECK (kind IN ('credit', 'deduction', 'payout'));
ALTER TABLE balance_entries DROP CONSTRAINT balance_entries_sign_check;
ALTER TABLE balance_entries ADD CONSTRAINT balance_entries_sign_check CHECK (
    (kind = 'credit' AND amount_minor > 0) OR (kind IN ('deduction', 'payout') AND amount_minor < 0));
ALTER TABLE balance_entries DROP COLUMN payout_id;
ALTER TABLE balance_entries DROP COLUMN program_id;
DROP TABLE payouts;
ALTER TABLE programs DROP COLUMN minimum_payout;
ALTER TABLE programs DROP COLUMN partner_links;
DROP TABLE partner_sessions;
DROP TABLE partner_accounts;
