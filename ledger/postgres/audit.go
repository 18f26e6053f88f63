package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/partnertrack/partnertrack/ledger"
)

// insertAudit records e in the caller's transaction, with the actor's
// email as it is now (none for the system, actor 0).
func insertAudit(ctx context.Context, tx *sqlx.Tx, e ledger.AuditEntry, now time.Time) error {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return err
	}
	var actor *int64
	if e.ActorUserID != 0 {
		actor = &e.ActorUserID
	}
	var subject *int64
	if e.SubjectID != 0 {
		subject = &e.SubjectID
	}
	// The details go as text: with binary_parameters, lib/pq sends a
	// []byte in binary format, which jsonb does not accept.
	_, err = tx.ExecContext(ctx, `
		INSERT INTO audit_log (program_id, actor_user_id, actor_email, action, subject_type, subject_id, details, created_at)
		VALUES ($1, $2, (SELECT email FROM users WHERE id = $2), $3, $4, $5, $6::jsonb, $7)`,
		e.ProgramID, actor, e.Action, e.SubjectType, subject, string(raw), now)
	return err
}
