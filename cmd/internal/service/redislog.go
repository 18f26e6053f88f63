package service

import (
	"context"
	"fmt"
	"log/slog"
)

// redisLog takes go-redis's own log lines (dial retries, pool errors),
// which it otherwise prints to stderr, into the process's logger at debug
// level. The failures that matter reach their callers as errors and are
// logged there, and a process that cannot reach Redis at start says so in
// the one line the contract asks for.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
