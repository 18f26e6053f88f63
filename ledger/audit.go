package ledger

import "time"

// The audit log of a program's partner program: every change a brand user
// makes to partners, groups, invites, applications and commissions is
// recorded with who made it and when, in the transaction of the change
// (link changes show in the link itself: its status and updated_at).
// Rows are only added (the table refuses an UPDATE).

// AuditEntry is one recorded action. ActorUserID is the dashboard user (0
// for the system, such as an automatic approval); the writer stores the
// user's email beside it, so the record outlives the user.
type AuditEntry struct {
	ID          int64
	ProgramID   int64
	ActorUserID int64
	ActorEmail  string // filled when read
	Action      string // "<subject>.<verb>", e.g. "commission.rejected"
	SubjectType string // "partner", "group", "invite", "application", "link", "commission"
	SubjectID   int64
	Details     map[string]any // what changed, in JSON terms; never a secret
	CreatedAt   time.Time
}
