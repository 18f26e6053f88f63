package ledger

import (
	"context"
	"net/mail"
	"strings"
	"time"
)

// Role is a user's role in a workspace.
type Role string

// Roles: owner (everything, including keys), admin (settings, webhooks),
// member (read).
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// ParseRole returns the role named by s.
func ParseRole(s string) (Role, bool) {
	switch Role(s) {
	case RoleOwner, RoleAdmin, RoleMember:
		return Role(s), true
	}
	return "", false
}

// Permissions of workspace roles.
const (
	PermTrackingList   = "tracking:list"
	PermSettingsRead   = "settings:read"
	PermSettingsWrite  = "settings:write"
	PermWebhooksManage = "webhooks:manage"
	PermKeysManage     = "keys:manage"
	// The partner program a brand runs: its partners, links, invites and
	// commission review (issue 24). Every member reads; owners and admins
	// change.
	PermPartnersRead  = "partners:read"
	PermPartnersWrite = "partners:write"
)

var rolePermissions = map[Role][]string{
	RoleOwner: {PermTrackingList, PermSettingsRead, PermSettingsWrite, PermWebhooksManage, PermKeysManage,
		PermPartnersRead, PermPartnersWrite},
	RoleAdmin:  {PermTrackingList, PermSettingsRead, PermSettingsWrite, PermWebhooksManage, PermPartnersRead, PermPartnersWrite},
	RoleMember: {PermTrackingList, PermSettingsRead, PermPartnersRead},
}

// Can reports whether the role holds the permission.
func (r Role) Can(perm string) bool {
	for _, p := range rolePermissions[r] {
		if p == perm {
			return true
		}
	}
	return false
}

// Workspace is an advertiser.
type Workspace struct {
	ID          int64
	Name        string
	OwnerUserID int64
	CreatedAt   time.Time
}

// User is a person who signs in to the dashboard or the CLI.
type User struct {
	ID          int64
	Email       string
	SuspendedAt *time.Time
	CreatedAt   time.Time
}

// SessionKind tells dashboard sessions from CLI login tokens.
type SessionKind string

// Session kinds and their lifetimes. The reference CLI keeps its login
// token for 90 days, so CLI tokens live that long.
const (
	DashboardSession SessionKind = "dashboard"
	CLISession       SessionKind = "cli"

	DashboardSessionTTL = 30 * 24 * time.Hour
	CLISessionTTL       = 90 * 24 * time.Hour
)

// Session is a signed-in user's token. Token is set only when the session
// is created; it is stored hashed.
type Session struct {
	Token     string
	UserID    int64
	Kind      SessionKind
	ExpiresAt time.Time
}

// Messages of the account services.
const (
	MsgEmail          = "email must be a valid email address"
	MsgWorkspaceName  = "name must be a string of 1 to 200 characters"
	MsgRole           = "role must be one of: owner, admin, member"
	MsgAccountBlocked = "Your account has been suspended."
)

// NormalizeEmail lower-cases and checks an address.
func NormalizeEmail(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) < 3 || len(s) > 320 {
		return "", false
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" {
		return "", false
	}
	return s, true
}

// AccountService manages workspaces, users, memberships and sessions.
type AccountService interface {
	// CreateWorkspace creates a workspace owned by the user with ownerEmail
	// (created when new). Errors: EInvalid.
	CreateWorkspace(ctx context.Context, name, ownerEmail string) (*Workspace, error)
	// AddMember adds (or changes the role of) the user with email.
	// Errors: EInvalid, ENotFound (workspace).
	AddMember(ctx context.Context, workspaceID int64, email string, role Role) (userID int64, err error)
	// CreateSession mints a sign-in token for a user. Errors: ENotFound,
	// EForbidden (suspended).
	CreateSession(ctx context.Context, userID int64, kind SessionKind) (*Session, error)
	// AuthenticateSession returns the live, unexpired session of token
	// whose user is not suspended. Errors: EUnauthorized.
	AuthenticateSession(ctx context.Context, token string) (*Session, error)
	// SuspendUser suspends a user and revokes their sessions.
	// Errors: ENotFound.
	SuspendUser(ctx context.Context, userID int64) (*User, error)
	// UnlinkIdentity removes the user's binding to a provider identity:
	// their next sign-in binds anew (the operator's relink of a person
	// whose provider account changed). Errors: ENotFound.
	UnlinkIdentity(ctx context.Context, userID int64) (*User, error)
	// ProgramRole returns the user's role in the workspace of a program.
	// Errors: ENotFound (program), EForbidden (not a member).
	ProgramRole(ctx context.Context, userID, programID int64) (Role, error)
}
