-- +goose Up
-- Invites, applications and the public program page (issue 24): every
-- program gets a public address (slug) and an approval rule for
-- applications; brands invite partners by email and review applications.

-- The public page's address: lowercase letters, digits and '-', 3 to 60
-- characters, unique across the service. A program without one chosen has
-- program-<id>, given by a trigger so that every way a program is made
-- (operator API, CLI init, tests, restores) gets one.
ALTER TABLE programs ADD COLUMN slug text;
-- An UPDATE checks a NOT VALID constraint on the rows it writes: a program
-- whose processor secret is still in clear (sealed later by `partnerctl
-- migrate`, see 00012) would stop the migration. The check is set aside
-- for the backfill and put back exactly as 00012 wrote it.
ALTER TABLE programs DROP CONSTRAINT programs_stripe_webhook_secret_sealed_check;
UPDATE programs SET slug = 'program-' || id;
ALTER TABLE programs ADD CONSTRAINT programs_stripe_webhook_secret_sealed_check
    CHECK (stripe_webhook_secret LIKE 'enc:%') NOT VALID;
ALTER TABLE programs ALTER COLUMN slug SET NOT NULL;
ALTER TABLE programs ADD CONSTRAINT programs_slug_check CHECK (slug ~ '^[a-z0-9-]{3,60}$');
ALTER TABLE programs ADD CONSTRAINT programs_slug_key UNIQUE (slug);
-- +goose StatementBegin
CREATE FUNCTION programs_default_slug() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.slug IS NULL THEN
        NEW.slug := 'program-' || NEW.id;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER programs_default_slug BEFORE INSERT ON programs
    FOR EACH ROW EXECUTE FUNCTION programs_default_slug();

-- Whether an application makes the applicant a partner at once (auto) or
-- waits for the brand (manual).
ALTER TABLE programs ADD COLUMN partner_approval text NOT NULL DEFAULT 'manual'
    CHECK (partner_approval IN ('auto', 'manual'));

-- An invitation of one email to a program. Only the hash of the link's
-- token is kept; a resend makes a new token. "expired" is not stored: a
-- pending invite whose expires_at has passed is expired. group_id NULL is
-- the default group at acceptance; the foreign key names the program, so
-- an invite can never point at another program's group.
CREATE TABLE partner_invites (
    id            bigserial   PRIMARY KEY,
    program_id    bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    email         text        NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
    group_id      bigint,
    message       text        CHECK (length(message) <= 1000),
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'cancelled')),
    token_hash    text        NOT NULL,
    invited_by    bigint,
    partner_id    bigint      REFERENCES partners (id) ON DELETE SET NULL,
    expires_at    timestamptz NOT NULL,
    last_sent_at  timestamptz NOT NULL,
    accepted_at   timestamptz,
    cancelled_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT partner_invites_group_fkey FOREIGN KEY (program_id, group_id) REFERENCES partner_groups (program_id, id),
    CONSTRAINT partner_invites_token_key UNIQUE (token_hash)
);
CREATE INDEX partner_invites_program_idx ON partner_invites (program_id, id DESC);
CREATE UNIQUE INDEX partner_invites_pending_key ON partner_invites (program_id, email) WHERE status = 'pending';

-- A partner's application to a program's public page. One pending
-- application per email and program.
CREATE TABLE partner_applications (
    id          bigserial   PRIMARY KEY,
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    email       text        NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    message     text        CHECK (length(message) <= 1000),
    website     text        CHECK (length(website) <= 2048),
    status      text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    reason      text        CHECK (length(reason) <= 1000),
    group_id    bigint,
    partner_id  bigint      REFERENCES partners (id) ON DELETE SET NULL,
    decided_by  bigint,
    decided_at  timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT partner_applications_group_fkey FOREIGN KEY (program_id, group_id) REFERENCES partner_groups (program_id, id)
);
CREATE INDEX partner_applications_program_idx ON partner_applications (program_id, id DESC);
CREATE UNIQUE INDEX partner_applications_pending_key ON partner_applications (program_id, email) WHERE status = 'pending';

-- +goose Down
DROP TABLE partner_applications;
DROP TABLE partner_invites;
ALTER TABLE programs DROP COLUMN partner_approval;
DROP TRIGGER programs_default_slug ON programs;
DROP FUNCTION programs_default_slug();
ALTER TABLE programs DROP COLUMN slug;
