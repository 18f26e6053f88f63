// Package ledger holds the rules of partner tracking: programs and their
// keys, partners and referral links, customers and their funnel, sales,
// commissions, refunds and balances, and the money arithmetic behind them.
//
// It imports no HTTP framework, no queue and no SQL driver. It defines the
// service interfaces the edge and the workers call and the [Enqueuer] it
// needs for side effects; the ledger/postgres package implements the
// services inside Postgres transactions and is the only code that speaks
// SQL.
//
// Every error a service returns is either an [*Error] carrying one of the
// stable codes below, or an unexpected failure that [ErrorCode] reports as
// [EInternal].
package ledger
