-- +goose Up
-- Signing secrets are stored sealed (AES-256-GCM with a key from
-- SECRETS_KEY, ledger/secretbox): "enc:v1:<key id>:<base64>". SQL cannot
-- seal, so rows written before this migration keep their plaintext until
-- `partnerctl migrate` (right after applying this) or `partnerctl secrets
-- rotate` seals them; NOT VALID skips the check of those existing rows
-- while refusing every plaintext write from now on.
ALTER TABLE webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_secret_sealed_check CHECK (secret LIKE 'enc:%') NOT VALID;
ALTER TABLE programs
    ADD CONSTRAINT programs_stripe_webhook_secret_sealed_check
    CHECK (stripe_webhook_secret LIKE 'enc:%') NOT VALID;

-- The delivery log is shown to brand admins: its errors held the resolved
-- address of the receiver (`dial tcp 10.0.0.7:443: connect: connection
-- refused`). Keep only the generic reason notify/reason.go writes now.
UPDATE webhook_deliveries SET error = CASE
        WHEN error LIKE 'receiver answered HTTP %' THEN error
        WHEN error LIKE '%refused a loopback, private or link-local address%' THEN 'blocked address'
        WHEN error LIKE '%connection refused%' THEN 'connection refused'
        WHEN error LIKE '%connection reset%' THEN 'connection reset'
        WHEN error LIKE '%no such host%' THEN 'host not found'
        WHEN error ILIKE '%timeout%' OR error LIKE '%deadline exceeded%' THEN 'timeout'
        WHEN error LIKE '%tls:%' OR error LIKE '%x509:%' OR error LIKE '%certificate%' THEN 'TLS error'
        WHEN error LIKE '%unreachable%' THEN 'network unreachable'
        WHEN error LIKE '%webhook secret%' THEN 'signing failed'
        ELSE 'connection failed'
    END
WHERE error IS NOT NULL;

-- +goose Down
ALTER TABLE programs DROP CONSTRAINT programs_stripe_webhook_secret_sealed_check;
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_secret_sealed_check;
