package ledger

import (
	"context"
	"slices"
)

// The agent API: operator-issued agt_ keys, each confined to one workspace
// and carrying scopes, read and update the workspace's programs.

// Messages of agent authentication.
const (
	MsgAgentKeyRequired = "Missing or malformed Authorization header; expected Bearer agent key"
	MsgAgentKeyInvalid  = "Invalid agent key"
	MsgAgentProgramKey  = "A program API key does not authenticate agent endpoints; use an agent key (agt_...)"
)

// MsgAgentScope is the 403 of a key without the scope an endpoint needs.
func MsgAgentScope(scope string) string {
	return "This agent key lacks the " + scope + " scope"
}

// Has reports whether the key carries scope.
func (k *AgentKey) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// AgentService authenticates agent keys and lists what they may see.
type AgentService interface {
	// AuthenticateAgentKey returns the live key whose whole value is token
	// (Key left empty). Errors: EUnauthorized.
	AuthenticateAgentKey(ctx context.Context, token string) (*AgentKey, error)
	// WorkspacePrograms lists a workspace's programs, oldest first.
	WorkspacePrograms(ctx context.Context, workspaceID int64) ([]*Program, error)
}
