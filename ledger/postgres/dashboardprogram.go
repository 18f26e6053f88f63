package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// The dashboard's program routes on ProgramService: the signed-in user's
// programs, and a program created with the workspace worked out from the
// user's memberships.

var _ ledger.DashboardProgramService = (*ProgramService)(nil)

// memberProgramRow is a program row with the user's role and the
// workspace's name.
type memberProgramRow struct {
	programRow
	Role          string `db:"role"`
	WorkspaceName string `db:"workspace_name"`
}

func (r *memberProgramRow) memberProgram() ledger.MemberProgram {
	return ledger.MemberProgram{Program: *r.program(), Role: ledger.Role(r.Role), WorkspaceName: r.WorkspaceName}
}

// memberProgramsQuery reads programs through the user's memberships
// (memberships_user_id_idx), each with its live key's masked form.
const memberProgramsQuery = `
	SELECT ` + programColumns + `, m.role, w.name AS workspace_name
	FROM memberships m
	JOIN workspaces w ON w.id = m.workspace_id
	JOIN programs p ON p.workspace_id = m.workspace_id
	LEFT JOIN program_keys k ON k.program_id = p.id AND k.mode = 'live'
	WHERE m.user_id = $1`

// MemberPrograms lists the programs of the user's workspaces by name, id.
func (s *ProgramService) MemberPrograms(ctx context.Context, userID int64) (out []ledger.MemberProgram, err error) {
	defer wrap(&err, "postgres.MemberPrograms(user %d)", userID)
	var rows []memberProgramRow
	if err := s.db.SelectContext(ctx, &rows, memberProgramsQuery+` ORDER BY p.name, p.id`, userID); err != nil {
		return nil, err
	}
	out = make([]ledger.MemberProgram, len(rows))
	for i := range rows {
		out[i] = rows[i].memberProgram()
	}
	return out, nil
}

// MemberProgram is one program of the user's workspaces.
func (s *ProgramService) MemberProgram(ctx context.Context, userID, programID int64) (mp *ledger.MemberProgram, err error) {
	defer wrap(&err, "postgres.MemberProgram(user %d, program %d)", userID, programID)
	var row memberProgramRow
	if err := s.db.GetContext(ctx, &row, memberProgramsQuery+` AND p.id = $2`, userID, programID); errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("program")
	} else if err != nil {
		return nil, err
	}
	p := row.memberProgram()
	return &p, nil
}

// CreateMemberProgram locks the user's row, so that two first programs
// of one user sent at once make one workspace, not two; reads the user's
// memberships; lets ledger.ChooseProgramWorkspace decide; and writes the
// workspace (when new), the owner's membership and the program in one
// transaction.
func (s *ProgramService) CreateMemberProgram(ctx context.Context, userID int64, workspaceID ledger.Input[int64], in ledger.ProgramInput) (mp *ledger.MemberProgram, err error) {
	defer wrap(&err, "postgres.CreateMemberProgram(user %d)", userID)
	now := s.db.now()
	var id int64
	err = s.db.Transact(ctx, func(tx *sqlx.Tx) error {
		var locked int64
		if err := tx.GetContext(ctx, &locked, `SELECT id FROM users WHERE id = $1 FOR UPDATE`, userID); errors.Is(err, sql.ErrNoRows) {
			return notFound("user")
		} else if err != nil {
			return err
		}
		var rows []struct {
			WorkspaceID int64  `db:"workspace_id"`
			Role        string `db:"role"`
		}
		if err := tx.SelectContext(ctx, &rows, `
			SELECT workspace_id, role FROM memberships WHERE user_id = $1 ORDER BY workspace_id`, userID); err != nil {
			return err
		}
		memberships := make([]ledger.Membership, len(rows))
		for i, r := range rows {
			memberships[i] = ledger.Membership{WorkspaceID: r.WorkspaceID, Role: ledger.Role(r.Role)}
		}
		choice, err := ledger.ChooseProgramWorkspace(memberships, workspaceID)
		if err != nil {
			return err
		}
		valid, err := in.ValidateCreate()
		if err != nil {
			return err
		}
		ws := choice.WorkspaceID
		if choice.Create {
			if err := tx.GetContext(ctx, &ws, `
				INSERT INTO workspaces (name, created_at) VALUES ($1, $2) RETURNING id`,
				ledger.WorkspaceNameFor(valid), now); err != nil {
				return err
			}
			if err := upsertMembership(ctx, tx, ws, userID, ledger.RoleOwner, now); err != nil {
				return err
			}
		}
		id, err = insertProgram(ctx, tx, ws, valid, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	var row memberProgramRow
	if err := s.db.GetContext(ctx, &row, memberProgramsQuery+` AND p.id = $2`, userID, id); err != nil {
		return nil, err
	}
	p := row.memberProgram()
	return &p, nil
}
