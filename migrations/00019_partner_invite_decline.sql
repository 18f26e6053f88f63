-- +goose Up
-- The partner portal (issue 26): a partner may decline an invite to its
-- email. A declined invite is kept (the brand lists it as declined) and
-- frees the program and email for a later invite, as a cancelled one does.
ALTER TABLE partner_invites DROP CONSTRAINT partner_invites_status_check;
ALTER TABLE partner_invites ADD CONSTRAINT partner_invites_status_check
    CHECK (status IN ('pending', 'accepted', 'cancelled', 'declined'));
ALTER TABLE partner_invites ADD COLUMN declined_at timestamptz;

-- The portal lists the pending invites of a partner's email.
CREATE INDEX partner_invites_email_pending_idx ON partner_invites (email) WHERE status = 'pending';

-- +goose Down
DROP INDEX partner_invites_email_pending_idx;
UPDATE partner_invites SET status = 'cancelled', cancelled_at = declined_at WHERE status = 'declined';
ALTER TABLE partner_invites DROP COLUMN declined_at;
ALTER TABLE partner_invites DROP CONSTRAINT partner_invites_status_check;
ALTER TABLE partner_invites ADD CONSTRAINT partner_invites_status_check
    CHECK (status IN ('pending', 'accepted', 'cancelled'));
