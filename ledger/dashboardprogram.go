package ledger

import (
	"context"
	"strings"
)

// The dashboard's own program routes: the programs of every workspace a
// signed-in user belongs to, and a program created from the dashboard
// (the operator's creation, with the workspace worked out from the user's
// memberships).

// Messages of the dashboard's program creation.
const (
	MsgWorkspaceRequired = "workspace_id is required"
	MsgWorkspaceIDShape  = "workspace_id must be a positive integer"
	MsgWorkspaceNotFound = "workspace not found"
	MsgProgramCreate     = "Only a workspace owner or admin can create programs"
)

// MemberProgram is one program of a user's workspaces, with the user's
// role there and the workspace's name.
type MemberProgram struct {
	Program
	Role          Role
	WorkspaceName string
}

// Membership is a user's role in one workspace.
type Membership struct {
	WorkspaceID int64
	Role        Role
}

// WorkspaceChoice is where a dashboard program goes: an existing
// workspace, or (Create) a new one the user will own.
type WorkspaceChoice struct {
	WorkspaceID int64
	Create      bool
}

// ChooseProgramWorkspace decides the workspace of a program the user
// creates from the dashboard, from all of the user's memberships. A
// workspace_id the user does not belong to is ENotFound (another tenant's
// workspace is not revealed), one where the user is a member only is
// EForbidden. Without workspace_id: a user who manages no workspace (none
// at all, or a member only of other brands' workspaces) gets a new one of
// their own, a user who owns or administers exactly one uses it, and one
// who manages several must say which (EInvalid, MsgWorkspaceRequired).
func ChooseProgramWorkspace(memberships []Membership, requested Input[int64]) (WorkspaceChoice, error) {
	if requested.Present {
		if requested.Bad || requested.Value <= 0 {
			return WorkspaceChoice{}, NewError(EInvalid, MsgWorkspaceIDShape)
		}
		for _, m := range memberships {
			if m.WorkspaceID != requested.Value {
				continue
			}
			if !m.Role.managesPrograms() {
				return WorkspaceChoice{}, NewError(EForbidden, MsgProgramCreate)
			}
			return WorkspaceChoice{WorkspaceID: m.WorkspaceID}, nil
		}
		return WorkspaceChoice{}, NewError(ENotFound, MsgWorkspaceNotFound)
	}
	var managed []int64
	for _, m := range memberships {
		if m.Role.managesPrograms() {
			managed = append(managed, m.WorkspaceID)
		}
	}
	switch len(managed) {
	case 0:
		return WorkspaceChoice{Create: true}, nil
	case 1:
		return WorkspaceChoice{WorkspaceID: managed[0]}, nil
	}
	return WorkspaceChoice{}, NewError(EInvalid, MsgWorkspaceRequired)
}

// managesPrograms reports whether the role may create programs in its
// workspace: owners and admins, as for the CLI's init.
func (r Role) managesPrograms() bool { return r == RoleOwner || r == RoleAdmin }

// maxWorkspaceName is the longest workspace name (the column's check).
const maxWorkspaceName = 200

// WorkspaceNameFor names the workspace made for a user's first program:
// the program's domain (a normalised host name, so ASCII), cut to the
// longest name a workspace may have.
func WorkspaceNameFor(p Program) string {
	name := strings.TrimSpace(p.Domain)
	if name == "" {
		name = p.Name
	}
	if len(name) > maxWorkspaceName {
		name = name[:maxWorkspaceName]
	}
	return name
}

// DashboardProgramService serves the signed-in user's own program routes.
type DashboardProgramService interface {
	// MemberPrograms lists the programs of every workspace userID belongs
	// to, ordered by name then id; empty for a user with no workspace.
	MemberPrograms(ctx context.Context, userID int64) ([]MemberProgram, error)
	// MemberProgram is one program of userID's workspaces. Errors:
	// ENotFound for a program of another workspace or none.
	MemberProgram(ctx context.Context, userID, programID int64) (*MemberProgram, error)
	// CreateMemberProgram creates a program in the workspace that
	// ChooseProgramWorkspace picks, creating that workspace (owned by the
	// user) in the same transaction when the user has none. Errors: those
	// of ChooseProgramWorkspace, then those of ProgramInput.ValidateCreate.
	CreateMemberProgram(ctx context.Context, userID int64, workspaceID Input[int64], in ProgramInput) (*MemberProgram, error)
}
