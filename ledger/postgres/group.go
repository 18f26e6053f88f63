package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// GroupService implements ledger.GroupService: a program's partner
// groups and the versions of their terms (migration 00014).
type GroupService struct{ db *DB }

// NewGroupService returns the group service over db.
func NewGroupService(db *DB) *GroupService { return &GroupService{db: db} }

var _ ledger.GroupService = (*GroupService)(nil)

// groupColumns read a group with its terms in force (its policy's, else
// the program's for the default group) and its partners that are not
// removed, the test partner left out (enrollments_group_id_idx).
const groupColumns = `g.id, g.program_id, g.name, g.is_default, g.policy_id,
	COALESCE(cp.commission_type, p.commission_type), COALESCE(cp.commission_rate, p.commission_rate),
	COALESCE(cp.duration_months, p.duration_months), COALESCE(cp.hold_days, p.hold_days),
	(SELECT count(*) FROM enrollments e JOIN partners pa ON pa.id = e.partner_id
		WHERE e.group_id = g.id AND e.status <> 'removed' AND NOT pa.is_test),
	g.created_at, g.updated_at
	FROM partner_groups g JOIN programs p ON p.id = g.program_id
	LEFT JOIN commission_policies cp ON cp.id = g.policy_id`

// groupReader is a *DB or a *sqlx.Tx.
type groupReader interface {
	QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error)
}

// readGroups runs a query of groupColumns with the WHERE and arguments
// given, default group first, then by id.
func readGroups(ctx context.Context, q groupReader, where string, args ...any) ([]ledger.PartnerGroup, error) {
	rows, err := q.QueryxContext(ctx, `SELECT `+groupColumns+` WHERE `+where+` ORDER BY g.is_default DESC, g.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ledger.PartnerGroup{}
	for rows.Next() {
		var g ledger.PartnerGroup
		var typ string
		if err := rows.Scan(&g.ID, &g.ProgramID, &g.Name, &g.IsDefault, &g.PolicyID, &typ, &g.Terms.Rate,
			&g.Terms.DurationMonths, &g.Terms.HoldDays, &g.Partners, &g.CreatedAt, &g.UpdatedAt); err != nil {
			return nil, err
		}
		g.Terms.Type = ledger.CommissionType(typ)
		g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
		out = append(out, g)
	}
	return out, rows.Err()
}

// readGroup reads one group of the program. Errors: ENotFound (group).
func readGroup(ctx context.Context, q groupReader, programID, groupID int64) (*ledger.PartnerGroup, error) {
	gs, err := readGroups(ctx, q, `g.program_id = $1 AND g.id = $2`, programID, groupID)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, notFound("group")
	}
	return &gs[0], nil
}

// Groups lists the program's groups in one query.
func (s *GroupService) Groups(ctx context.Context, programID int64) (gs []ledger.PartnerGroup, err error) {
	defer wrap(&err, "postgres.Groups(%d)", programID)
	return readGroups(ctx, s.db, `g.program_id = $1`, programID)
}

// groupNameTaken turns the unique name violation into the 409.
func groupNameTaken(err error) error {
	if uniqueViolation(err) == "partner_groups_program_name_key" {
		return ledger.NewError(ledger.EConflict, ledger.MsgGroupNameTaken)
	}
	return err
}

// CreateGroup locks the program (so that concurrent creations count the
// groups one after the other), then writes the group and its first terms
// version in one statement: the group must point at a version and the
// version at its group, and foreign keys are checked at the end of the
// statement.
func (s *GroupService) CreateGroup(ctx context.Context, programID, actorID int64, in ledger.GroupInput) (g *ledger.PartnerGroup, err error) {
	defer wrap(&err, "postgres.CreateGroup(%d)", programID)
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		prog, err := findProgram(ctx, tx, programID, true)
		if err != nil {
			return err
		}
		name, terms, err := in.ValidateCreate(ledger.ProgramTerms(prog))
		if err != nil {
			return err
		}
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM partner_groups WHERE program_id = $1`, programID); err != nil {
			return err
		}
		if n >= ledger.MaxGroups {
			return ledger.NewError(ledger.EConflict, ledger.MsgGroupLimit)
		}
		var groupID, policyID int64
		err = tx.QueryRowxContext(ctx, `
			WITH ids AS (
				SELECT nextval('partner_groups_id_seq') AS gid, nextval('commission_policies_id_seq') AS pid
			), g AS (
				INSERT INTO partner_groups (id, program_id, name, is_default, policy_id, created_at, updated_at)
				SELECT gid, $1, $2, false, pid, $7, $7 FROM ids
			), cp AS (
				INSERT INTO commission_policies (id, group_id, commission_type, commission_rate, duration_months, hold_days, created_at)
				SELECT pid, gid, $3, $4, $5, $6, $7 FROM ids
			)
			SELECT gid, pid FROM ids`,
			programID, name, string(terms.Type), terms.Rate, terms.DurationMonths, terms.HoldDays, now).Scan(&groupID, &policyID)
		if err != nil {
			return groupNameTaken(err)
		}
		if err := insertAudit(ctx, tx, ledger.AuditEntry{
			ProgramID: programID, ActorUserID: actorID, Action: "group.created", SubjectType: "group", SubjectID: groupID,
			Details: map[string]any{"name": name, "policy_id": policyID, "terms": termsDetails(terms)},
		}, now); err != nil {
			return err
		}
		g, err = readGroup(ctx, tx, programID, groupID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// UpdateGroup locks the program and the group, then renames it and/or
// changes its terms. Terms equal to the ones in force write nothing: a
// version is written only when the terms really change. The default
// group's terms are the program's fields, changed by updateProgram (the
// settings' write path) in this transaction.
func (s *GroupService) UpdateGroup(ctx context.Context, programID, groupID, actorID int64, in ledger.GroupInput) (g *ledger.PartnerGroup, err error) {
	defer wrap(&err, "postgres.UpdateGroup(%d, %d)", programID, groupID)
	if in.Empty() {
		return nil, ledger.NewError(ledger.EInvalid, ledger.MsgGroupNoChange)
	}
	now := s.db.now()
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := findProgram(ctx, tx, programID, true); err != nil {
			return err
		}
		var locked int64
		if err := tx.GetContext(ctx, &locked, `SELECT id FROM partner_groups WHERE id = $1 AND program_id = $2 FOR NO KEY UPDATE`,
			groupID, programID); errors.Is(err, sql.ErrNoRows) {
			return notFound("group")
		} else if err != nil {
			return err
		}
		cur, err := readGroup(ctx, tx, programID, groupID)
		if err != nil {
			return err
		}
		details := map[string]any{}
		name := cur.Name
		if in.Name.Present {
			if name, err = in.ValidateName(); err != nil {
				return err
			}
		}
		terms, err := in.ApplyTerms(cur.Terms)
		if err != nil {
			return err
		}
		if name != cur.Name {
			details["name"] = map[string]any{"from": cur.Name, "to": name}
		}
		policyID := cur.PolicyID
		if !terms.Equal(cur.Terms) {
			details["terms"] = map[string]any{"from": termsDetails(cur.Terms), "to": termsDetails(terms)}
			if cur.IsDefault {
				if err := updateProgram(ctx, tx, programID, in.TermsInput(), now); err != nil {
					return err
				}
			} else {
				var id int64
				if err := tx.GetContext(ctx, &id, `
					INSERT INTO commission_policies (group_id, commission_type, commission_rate, duration_months, hold_days, created_at)
					VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
					groupID, string(terms.Type), terms.Rate, terms.DurationMonths, terms.HoldDays, now); err != nil {
					return err
				}
				policyID = &id
				details["policy_id"] = id
			}
		}
		if len(details) == 0 {
			g = cur
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE partner_groups SET name = $3, policy_id = $4, updated_at = $5
			WHERE id = $1 AND program_id = $2`, groupID, programID, name, policyID, now); err != nil {
			return groupNameTaken(err)
		}
		if err := insertAudit(ctx, tx, ledger.AuditEntry{
			ProgramID: programID, ActorUserID: actorID, Action: "group.updated", SubjectType: "group", SubjectID: groupID,
			Details: details,
		}, now); err != nil {
			return err
		}
		g, err = readGroup(ctx, tx, programID, groupID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// termsDetails are terms as the audit log records them (the rate as an
// exact decimal string).
func termsDetails(t ledger.CommissionTerms) map[string]any {
	return map[string]any{
		"commission_type": string(t.Type), "commission_rate": t.Rate.String(),
		"duration_months": t.DurationMonths, "hold_days": t.HoldDays,
	}
}
