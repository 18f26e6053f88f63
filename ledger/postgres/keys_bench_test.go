package postgres_test

import (
	"context"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
	"github.com/partnertrack/partnertrack/ledger/postgres/pgtest"
)

// BenchmarkAuthenticateProgramKey is the key lookup every sale, refund
// and server-mode lead starts with: the key's SHA-256 read by index.
func BenchmarkAuthenticateProgramKey(b *testing.B) {
	db := pgtest.New(b)
	bundle := &testBundle{db: db, accounts: postgres.NewAccountService(db.DB), programs: postgres.NewProgramService(db.DB)}
	p := MustProgram(b, bundle)
	ctx := context.Background()
	g, err := bundle.programs.RegenerateProgramKey(ctx, p.ID, ledger.LiveKey)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if k, err := bundle.programs.AuthenticateProgramKey(ctx, g.APIKey); err != nil || k.ProgramID != p.ID {
				b.Fatalf("auth = %+v, %v", k, err)
			}
		}
	})
}
