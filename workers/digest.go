package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/partnertrack/partnertrack/ledger"
)

// CommissionDigestHandler sends the daily commission digests of the day
// before (ledger.DigestDay) and of the days before it not digested yet
// (ledger.DigestDays). The scheduler runs it every hour: the first run of
// a day sends the digests, later runs find them sent (commission_digests)
// and send nothing, and a day whose runs were all missed (the worker was
// down) is still digested when the worker is back.
type CommissionDigestHandler struct {
	Digests ledger.CommissionDigester
	Now     func() time.Time // nil: time.Now
	Logger  *slog.Logger
}

// ProcessTask digests the days a run now covers, oldest first.
func (h *CommissionDigestHandler) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	for _, day := range ledger.DigestDays(now()) {
		n, err := h.Digests.SendCommissionDigests(ctx, day)
		if n > 0 {
			h.Logger.Info("commission digests queued", "day", day.Format(time.DateOnly), "count", n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
