package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
)

// AgentService implements ledger.AgentService.
type AgentService struct{ db *DB }

// NewAgentService returns the agent service over db.
func NewAgentService(db *DB) *AgentService { return &AgentService{db: db} }

var _ ledger.AgentService = (*AgentService)(nil)

// AuthenticateAgentKey looks a live agent key up by its SHA-256.
func (s *AgentService) AuthenticateAgentKey(ctx context.Context, token string) (k *ledger.AgentKey, err error) {
	defer wrap(&err, "postgres.AuthenticateAgentKey")
	k = &ledger.AgentKey{}
	err = s.db.QueryRowContext(ctx, `
		SELECT id, workspace_id, scopes FROM agent_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
		ledger.HashSecret(token)).Scan(&k.ID, &k.WorkspaceID, pq.Array(&k.Scopes))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ledger.NewError(ledger.EUnauthorized, ledger.MsgAgentKeyInvalid)
	} else if err != nil {
		return nil, err
	}
	return k, nil
}

// WorkspacePrograms lists a workspace's programs, oldest first.
func (s *AgentService) WorkspacePrograms(ctx context.Context, workspaceID int64) (out []*ledger.Program, err error) {
	defer wrap(&err, "postgres.WorkspacePrograms(%d)", workspaceID)
	var rows []programRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+programColumns+`
		FROM programs p LEFT JOIN program_keys k ON k.program_id = p.id AND k.mode = 'live'
		WHERE p.workspace_id = $1 ORDER BY p.id`, workspaceID); err != nil {
		return nil, err
	}
	out = make([]*ledger.Program, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].program())
	}
	return out, nil
}
