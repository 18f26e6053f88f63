package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// CommissionDigestHandler sends the daily commission digests of the day
// before (ledger.DigestDay). The scheduler runs it every hour: the first
// run of a day sends the digests, later runs find them sent
// (commission_digests) and send nothing, and a day whose first runs were
// missed (the worker was down) is still digested later that day.
type CommissionDigestHandler struct {
	Digests ledger.CommissionDigester
	Now     func() time.Time // nil: time.Now
	Logger  *slog.Logger
}

// ProcessTask digests the day before the current one.
func (h *CommissionDigestHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	day := ledger.DigestDay(now())
	n, err := h.Digests.SendCommissionDigests(ctx, day)
	if n > 0 {
		h.Logger.Info("commission digests queued", "day", day.Format(time.DateOnly), "count", n)
	}
	return err
}
