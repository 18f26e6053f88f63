package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/lib/pq"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/groupcommit"
)

// Program-key lookups that arrive while one is running share the next
// one: a single statement finds every key asked for meanwhile
// (key_hash = ANY). Every sale, refund, lead and program-key call starts
// with a lookup, so under load this spares Postgres and the edge a
// statement per call. A lookup's statement always starts after its call
// arrived (a call never joins a statement already sent), so a key
// regenerated before the call is refused, exactly as with a lookup of its
// own; nothing is cached between calls.

const (
	// keyLookupBatch bounds the keys of one statement.
	keyLookupBatch = 64
	// keyLookupsInFlight is how many lookup statements run at once. A
	// lookup starts at once when none is running (no delay on a quiet
	// system), else when a batch is full; it never waits on a lock.
	keyLookupsInFlight = 2
	// keyLookupTimeout bounds one lookup statement; the batch owns its
	// deadline, whichever callers gave up.
	keyLookupTimeout = 10 * time.Second
)

// qProgramKeysByHash reads the keys with the given hashes ($1), and
// qProgramKeyByHash the key of one hash, a lookup alone (most of them on
// a system that is not busy). The array is read through a sub-select so
// that a custom plan cannot see its length: a custom plan that knows the
// array looks cheaper than the generic one, and Postgres planned the
// statement anew on most calls (pg_stat_statements at 1,000 sales and
// refunds a second: 3,143 plans in 4,715 calls). Both settle on their
// generic plans.
const (
	qProgramKeysByHash = `
		SELECT key_hash, program_id, mode, marked_at, deadline FROM program_keys WHERE key_hash = ANY ((SELECT $1::bytea[])::bytea[])`
	qProgramKeyByHash = `
		SELECT key_hash, program_id, mode, marked_at, deadline FROM program_keys WHERE key_hash = $1`
)

// keyLookup is one call's key, and what the batch found (nil: no key has
// that hash).
type keyLookup struct {
	hash []byte
	key  *ledger.ProgramKey
}

func newKeyLookups(s *ProgramService) *groupcommit.Committer[*keyLookup] {
	return groupcommit.New(keyLookupBatch, keyLookupsInFlight, s.lookupKeys)
}

// lookupKeys finds the keys of a batch in one statement. An error fails
// every call of the batch.
func (s *ProgramService) lookupKeys(items []*keyLookup) error {
	ctx, cancel := context.WithTimeout(context.Background(), keyLookupTimeout)
	defer cancel()
	var rows *sql.Rows
	var err error
	if len(items) == 1 {
		rows, err = s.keyLookup.pooled(qProgramKeyByHash).QueryContext(ctx, items[0].hash)
	} else {
		hashes := make(pq.ByteaArray, len(items))
		for i, it := range items {
			hashes[i] = it.hash
		}
		rows, err = s.keyLookup.pooled(qProgramKeysByHash).QueryContext(ctx, hashes)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	found := make(map[string]*ledger.ProgramKey, len(items))
	for rows.Next() {
		var hash []byte
		var mode string
		k := &ledger.ProgramKey{}
		if err := rows.Scan(&hash, &k.ProgramID, &mode, &k.MarkedAt, &k.Deadline); err != nil {
			return err
		}
		k.Mode = ledger.KeyMode(mode)
		found[string(hash)] = k
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, it := range items {
		if k, ok := found[string(it.hash)]; ok {
			copied := *k // each call owns its key
			it.key = &copied
		}
	}
	return nil
}
