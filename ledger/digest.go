package ledger

import (
	"context"
	"sort"
	"time"

	"github.com/shopspring/decimal"
)

// The commission digest (issue 26): once a day, each partner who earned
// commissions on the previous UTC day gets one email listing them per
// program, instead of one email per sale. commission_digests (partner,
// day) is written in the transaction that queues the email, so a rerun or
// a redelivered task never sends a second one.

// DigestGrace is how long after midnight (UTC) a day is still left alone:
// a sale whose transaction started before midnight may commit a little
// after it, and its commission belongs to the day before.
const DigestGrace = 15 * time.Minute

// DigestDay is the day a digest run at now covers: the UTC day before the
// one now (less the grace) is in, as a UTC midnight.
func DigestDay(now time.Time) time.Time {
	t := now.UTC().Add(-DigestGrace)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
}

// DigestCatchUp is how many days back from DigestDay a run also digests
// days not digested yet, so a worker down over a whole day still sends
// that day's digests when it is back (a day digested already sends
// nothing again).
const DigestCatchUp = 2

// DigestDays are the days a run at now covers, oldest first: DigestDay
// and the DigestCatchUp days before it.
func DigestDays(now time.Time) []time.Time {
	last := DigestDay(now)
	days := make([]time.Time, 0, DigestCatchUp+1)
	for i := DigestCatchUp; i >= 0; i-- {
		days = append(days, last.AddDate(0, 0, -i))
	}
	return days
}

// DigestRow is one partner's commissions of the day in one program and
// currency: how many, and their sum in minor units (exact).
type DigestRow struct {
	ProgramID   int64
	ProgramName string
	Currency    Currency
	Count       int64
	SumMinor    decimal.Decimal
}

// PlanCommissionDigest builds a partner's digest email from their rows of
// the day: one line per program (by name, then id) with the count over
// every currency and a total per currency (in currency order, never
// summed across currencies). It reports false when there is nothing to
// send.
func PlanCommissionDigest(partnerName string, day time.Time, rows []DigestRow, dashboardURL string) (CommissionDigestEmail, bool) {
	rows = append([]DigestRow(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.ProgramName != b.ProgramName {
			return a.ProgramName < b.ProgramName
		}
		if a.ProgramID != b.ProgramID {
			return a.ProgramID < b.ProgramID
		}
		return a.Currency < b.Currency
	})
	e := CommissionDigestEmail{PartnerName: partnerName, Day: day.UTC().Format(time.DateOnly), DashboardURL: dashboardURL}
	for i, r := range rows {
		if r.Count <= 0 {
			continue
		}
		if i == 0 || len(e.Programs) == 0 || rows[i-1].ProgramID != r.ProgramID {
			e.Programs = append(e.Programs, DigestProgram{ProgramName: r.ProgramName})
		}
		p := &e.Programs[len(e.Programs)-1]
		p.Count += r.Count
		major := r.SumMinor.Shift(-r.Currency.Exponent())
		p.Totals = append(p.Totals, DigestAmount{Currency: string(r.Currency),
			Amount: major.StringFixed(r.Currency.Exponent()), Words: MoneyWords(major, r.Currency)})
	}
	return e, len(e.Programs) > 0
}

// CommissionDigester sends the daily commission digests.
type CommissionDigester interface {
	// SendCommissionDigests writes, for each partner who earned a
	// commission on day (a UTC date; test sales, and rejected, reversed
	// or fully refunded commissions left out) and has no digest of that day yet, the digest
	// row and the email to the outbox in one transaction, and reports how
	// many emails it queued.
	SendCommissionDigests(ctx context.Context, day time.Time) (int, error)
}
