-- +goose Up
-- The brand's partner program (issue 24): groups of partners with their
-- own versioned commission terms, suspended enrollments, rejected
-- commissions and the program's append-only audit log.

-- A group of a program's partners. Every program has one default group
-- (is_default), whose terms are the program's own commission fields, so
-- the program settings stay their one write path: its policy_id is NULL.
-- Any other group points at the version of its terms in force now.
CREATE TABLE partner_groups (
    id          bigserial   PRIMARY KEY,
    program_id  bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    is_default  boolean     NOT NULL DEFAULT false,
    policy_id   bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT partner_groups_program_name_key UNIQUE (program_id, name),
    CONSTRAINT partner_groups_program_id_key UNIQUE (program_id, id),
    CONSTRAINT partner_groups_policy_check CHECK (is_default = (policy_id IS NULL))
);
CREATE UNIQUE INDEX partner_groups_default_key ON partner_groups (program_id) WHERE is_default;

-- The versions of a group's commission terms, never changed once written:
-- changing a group's terms writes a new version and points the group at
-- it, so a commission keeps the version in force when its sale was
-- recorded (commissions.policy_id). The checks are the program's.
CREATE TABLE commission_policies (
    id               bigserial   PRIMARY KEY,
    group_id         bigint      NOT NULL REFERENCES partner_groups (id) ON DELETE CASCADE,
    commission_type  text        NOT NULL CHECK (commission_type IN ('percent', 'fixed', 'recurring_percent', 'recurring_fixed')),
    commission_rate  numeric     NOT NULL CHECK (commission_rate > 0),
    duration_months  integer     NOT NULL DEFAULT 0 CHECK (duration_months >= 0),
    hold_days        integer     NOT NULL DEFAULT 30 CHECK (hold_days BETWEEN 0 AND 365),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT commission_policies_percent_rate_check CHECK (
        commission_type NOT IN ('percent', 'recurring_percent') OR commission_rate <= 100
    )
);
CREATE INDEX commission_policies_group_id_idx ON commission_policies (group_id);
ALTER TABLE partner_groups
    ADD CONSTRAINT partner_groups_policy_id_fkey FOREIGN KEY (policy_id) REFERENCES commission_policies (id);

-- +goose StatementBegin
CREATE FUNCTION partner_groups_add_default() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO partner_groups (program_id, name, is_default, created_at, updated_at)
    VALUES (NEW.id, 'Default', true, NEW.created_at, NEW.created_at);
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- Every way a program is made (operator API, tests, restores) gets its
-- default group.
CREATE TRIGGER programs_default_group AFTER INSERT ON programs
    FOR EACH ROW EXECUTE FUNCTION partner_groups_add_default();
INSERT INTO partner_groups (program_id, name, is_default, created_at, updated_at)
    SELECT id, 'Default', true, created_at, created_at FROM programs;

-- A partner is in one group of the program; an enrollment written without
-- one is put in the default group. The foreign key names the program too,
-- so an enrollment can never be in another program's group.
ALTER TABLE enrollments ADD COLUMN group_id bigint;
UPDATE enrollments e SET group_id = g.id FROM partner_groups g WHERE g.program_id = e.program_id AND g.is_default;
ALTER TABLE enrollments ALTER COLUMN group_id SET NOT NULL;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_group_fkey
    FOREIGN KEY (program_id, group_id) REFERENCES partner_groups (program_id, id);
CREATE INDEX enrollments_group_id_idx ON enrollments (group_id);
-- +goose StatementBegin
CREATE FUNCTION enrollments_default_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.group_id IS NULL THEN
        SELECT id INTO NEW.group_id FROM partner_groups WHERE program_id = NEW.program_id AND is_default;
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER enrollments_default_group BEFORE INSERT ON enrollments
    FOR EACH ROW EXECUTE FUNCTION enrollments_default_group();

-- A suspended partner's links answer 410 and it earns nothing new; what
-- it earned before stays.
ALTER TABLE enrollments DROP CONSTRAINT enrollments_status_check;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_status_check CHECK (status IN ('active', 'suspended', 'removed'));

-- Commission review: a rejected commission never pays. policy_id is the
-- group terms the commission was computed with (NULL: the program's own
-- terms, the default group's).
ALTER TABLE commissions DROP CONSTRAINT commissions_status_check;
ALTER TABLE commissions ADD CONSTRAINT commissions_status_check
    CHECK (status IN ('pending', 'approved', 'paid', 'reversed', 'refunded', 'rejected'));
ALTER TABLE commissions ADD COLUMN rejected_at timestamptz;
ALTER TABLE commissions ADD COLUMN policy_id bigint REFERENCES commission_policies (id);

-- The program's audit log: who did what to its partner program, when.
-- Rows are only ever added (an UPDATE is refused); they go with the
-- program. actor_user_id is not a foreign key, so that removing a user
-- keeps the record of what they did, with the email they had.
CREATE TABLE audit_log (
    id             bigserial   PRIMARY KEY,
    program_id     bigint      NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
    actor_user_id  bigint,
    actor_email    text,
    action         text        NOT NULL CHECK (length(action) BETWEEN 1 AND 100),
    subject_type   text        NOT NULL CHECK (length(subject_type) BETWEEN 1 AND 50),
    subject_id     bigint,
    details        jsonb       NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_program_idx ON audit_log (program_id, id DESC);
-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END $$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
ALTER TABLE commissions DROP COLUMN policy_id;
ALTER TABLE commissions DROP COLUMN rejected_at;
ALTER TABLE commissions DROP CONSTRAINT commissions_status_check;
ALTER TABLE commissions ADD CONSTRAINT commissions_status_check
    CHECK (status IN ('pending', 'approved', 'paid', 'reversed', 'refunded'));
ALTER TABLE enrollments DROP CONSTRAINT enrollments_status_check;
ALTER TABLE enrollments ADD CONSTRAINT enrollments_status_check CHECK (status IN ('active', 'removed'));
DROP TRIGGER enrollments_default_group ON enrollments;
DROP FUNCTION enrollments_default_group();
ALTER TABLE enrollments DROP COLUMN group_id;
DROP TRIGGER programs_default_group ON programs;
DROP FUNCTION partner_groups_add_default();
ALTER TABLE partner_groups DROP CONSTRAINT partner_groups_policy_id_fkey;
DROP TABLE commission_policies;
DROP TABLE partner_groups;
