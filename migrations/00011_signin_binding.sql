-- +goose Up
-- Sign-in binds a user to the provider's issuer and subject at first
-- sign-in: a later id_token with the same email and another subject is
-- refused until an operator unlinks the identity (docs/decisions.md,
-- "Hardening (issue 21): sign-in and CLI login").
ALTER TABLE users ADD COLUMN oidc_issuer text;
DROP INDEX users_oidc_subject_key;
CREATE UNIQUE INDEX users_oidc_identity_key ON users (oidc_issuer, oidc_subject)
    WHERE oidc_subject IS NOT NULL;

-- An id_token signs in once: its hash is kept until the token expires.
CREATE TABLE used_id_tokens (
    token_hash  bytea       PRIMARY KEY,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX used_id_tokens_expires_at_idx ON used_id_tokens (expires_at);

-- The CLI login is bound to the terminal that started it: a short code the
-- terminal and the sign-in page both show, the starting client's user
-- agent, the person's confirmation on the page before the callback may
-- complete, and, for clients that send one, an S256 code challenge whose
-- verifier the poll must present.
ALTER TABLE cli_sessions
    ADD COLUMN user_code      text,
    ADD COLUMN user_agent     text,
    ADD COLUMN confirmed_at   timestamptz,
    ADD COLUMN code_challenge text;

-- +goose Down
ALTER TABLE cli_sessions
    DROP COLUMN code_challenge,
    DROP COLUMN confirmed_at,
    DROP COLUMN user_agent,
    DROP COLUMN user_code;
DROP TABLE used_id_tokens;
DROP INDEX users_oidc_identity_key;
CREATE UNIQUE INDEX users_oidc_subject_key ON users (oidc_subject) WHERE oidc_subject IS NOT NULL;
ALTER TABLE users DROP COLUMN oidc_issuer;
