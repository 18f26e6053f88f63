package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/partnertrack/partnertrack/ledger"
)

// relayTimeout bounds a relay after commit; the sweep sends what it misses.
const relayTimeout = 10 * time.Second

// afterCommit hands committed outbox messages to the relay in the
// background, so that a slow or absent Redis never delays or changes a
// response; the outbox sweep sends whatever a relay fails to.
type afterCommit struct {
	relay  ledger.OutboxRelay
	logger *slog.Logger
	wg     sync.WaitGroup
}

// newAfterCommit relays through relay (nil: none, the outbox sweep sends
// everything) and logs failures to logger (nil: the default logger).
func newAfterCommit(relay ledger.OutboxRelay, logger *slog.Logger) *afterCommit {
	if logger == nil {
		logger = slog.Default()
	}
	return &afterCommit{relay: relay, logger: logger}
}

func (a *afterCommit) send(msgs []ledger.OutboxMessage) {
	if a.relay == nil || len(msgs) == 0 {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), relayTimeout)
		defer cancel()
		if err := a.relay.Relay(ctx, msgs); err != nil {
			a.logger.Warn("outbox relay after commit failed; the sweep will send the messages", "count", len(msgs), "err", err)
		}
	}()
}

// wait blocks until every relay started so far has finished.
func (a *afterCommit) wait() { a.wg.Wait() }
