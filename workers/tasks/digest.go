package tasks

import "github.com/hibiken/asynq"

// TypeCommissionDigest is the periodic commission digest (issue 26) on the
// maintenance queue: each partner who earned commissions on the previous
// UTC day gets one email (ledger.DigestDay).
const TypeCommissionDigest = "commissions:digest"

// NewCommissionDigestTask builds the periodic commission digest.
func NewCommissionDigestTask() *asynq.Task { return asynq.NewTask(TypeCommissionDigest, nil) }
