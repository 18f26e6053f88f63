package workers

import (
	"context"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// approvalBatch is how many commissions one pass approves before looking
// again.
const approvalBatch = 500

// CommissionApprovalHandler approves the commissions whose hold has ended,
// crediting their partners' balances. It is idempotent: a commission is
// approved once however often (or however concurrently) it runs.
type CommissionApprovalHandler struct {
	Commissions ledger.CommissionService
	Logger      *slog.Logger
}

// ProcessTask approves batches until none is due or ctx ends.
func (h *CommissionApprovalHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	total := 0
	for ctx.Err() == nil {
		n, err := h.Commissions.ApproveDue(ctx, approvalBatch)
		total += n
		if err != nil {
			return err
		}
		if n < approvalBatch {
			break
		}
	}
	if total > 0 {
		h.Logger.Info("commissions approved", "count", total)
	}
	return nil
}
