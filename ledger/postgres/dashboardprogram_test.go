package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/partnertrack/partnertrack/ledger"
)

// programNamed is percentProgram with another name and domain.
func programNamed(name, domain string) ledger.ProgramInput {
	in := percentProgram()
	in.Name, in.Domain = ledger.Some(name), ledger.Some(domain)
	return in
}

// userID returns the id of the user with email.
func userID(tb testing.TB, b *testBundle, email string) int64 {
	tb.Helper()
	var id int64
	if err := b.db.QueryRow(`SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		tb.Fatal(err)
	}
	return id
}

func TestMemberPrograms(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	mine, err := b.accounts.CreateWorkspace(ctx, "Mine", "me@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := b.accounts.CreateWorkspace(ctx, "Theirs", "them@other.example")
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := b.accounts.CreateWorkspace(ctx, "Hidden", "them@other.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.accounts.AddMember(ctx, theirs.ID, "me@acme.example", ledger.RoleMember); err != nil {
		t.Fatal(err)
	}
	// Names out of id order, and two of one name: by name, then id.
	zed, _ := b.programs.CreateProgram(ctx, mine.ID, programNamed("Zed", "zed.example"))
	alpha1, _ := b.programs.CreateProgram(ctx, theirs.ID, programNamed("Alpha", "a1.example"))
	alpha2, _ := b.programs.CreateProgram(ctx, mine.ID, programNamed("Alpha", "a2.example"))
	if _, err := b.programs.CreateProgram(ctx, hidden.ID, programNamed("Alpha", "hidden.example")); err != nil {
		t.Fatal(err)
	}

	list, err := b.programs.MemberPrograms(ctx, mine.OwnerUserID)
	if err != nil || len(list) != 3 {
		t.Fatalf("programs %+v, %v", list, err)
	}
	want := []struct {
		id        int64
		role      ledger.Role
		workspace string
	}{{alpha1.ID, ledger.RoleMember, "Theirs"}, {alpha2.ID, ledger.RoleOwner, "Mine"}, {zed.ID, ledger.RoleOwner, "Mine"}}
	for i, w := range want {
		got := list[i]
		if got.ID != w.id || got.Role != w.role || got.WorkspaceName != w.workspace || got.APITokenMasked == "" ||
			got.CommissionRate.String() != "30" {
			t.Errorf("program %d = %+v, want %+v", i, got, w)
		}
	}

	// A user with no workspace has an empty list, not nil.
	if _, err := b.accounts.CreateWorkspace(ctx, "Tmp", "lonely@acme.example"); err != nil {
		t.Fatal(err)
	}
	lonely := userID(t, b, "lonely@acme.example")
	b.db.Exec(`DELETE FROM memberships WHERE user_id = $1`, lonely)
	if list, err := b.programs.MemberPrograms(ctx, lonely); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("no workspace: %+v, %v", list, err)
	}
}

func TestCreateMemberProgram(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	ws, err := b.accounts.CreateWorkspace(ctx, "Acme Inc", "owner@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	owner := ws.OwnerUserID
	memberID, err := b.accounts.AddMember(ctx, ws.ID, "member@acme.example", ledger.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := b.db.QueryRow(query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("OKTheOnlyOwnedWorkspace", func(t *testing.T) {
		p, err := b.programs.CreateMemberProgram(ctx, owner, ledger.Input[int64]{}, programNamed("Shop", "shop.acme.example"))
		if err != nil {
			t.Fatal(err)
		}
		if p.WorkspaceID != ws.ID || p.Role != ledger.RoleOwner || p.WorkspaceName != "Acme Inc" || p.Domain != "shop.acme.example" ||
			p.HoldDays != ledger.DefaultHoldDays || p.APITokenMasked == "" {
			t.Fatalf("program %+v", p)
		}
		if n := count(`SELECT count(*) FROM program_keys WHERE program_id = $1`, p.ID); n != 2 {
			t.Fatalf("%d keys, want live and test", n)
		}
	})
	t.Run("ErrMemberNamesTheWorkspace", func(t *testing.T) {
		_, err := b.programs.CreateMemberProgram(ctx, memberID, ledger.Some(ws.ID), percentProgram())
		assertCode(t, err, ledger.EForbidden, ledger.MsgProgramCreate)
	})
	t.Run("OKMemberWithoutWorkspaceIDGetsItsOwn", func(t *testing.T) {
		// A member only of another's workspace starts a brand of its own.
		p, err := b.programs.CreateMemberProgram(ctx, memberID, ledger.Input[int64]{}, programNamed("Side", "side.example"))
		if err != nil {
			t.Fatal(err)
		}
		if p.WorkspaceID == ws.ID || p.Role != ledger.RoleOwner || p.WorkspaceName != "side.example" {
			t.Fatalf("program %+v", p)
		}
	})
	t.Run("ErrAnotherTenantsWorkspace", func(t *testing.T) {
		other, err := b.accounts.CreateWorkspace(ctx, "Other", "other@other.example")
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.programs.CreateMemberProgram(ctx, owner, ledger.Some(other.ID), percentProgram())
		assertCode(t, err, ledger.ENotFound, ledger.MsgWorkspaceNotFound)
	})
	t.Run("ErrValidationStoresNothing", func(t *testing.T) {
		before := count(`SELECT count(*) FROM programs`)
		in := percentProgram()
		in.CommissionRate = ledger.Some(decimal.NewFromInt(101))
		_, err := b.programs.CreateMemberProgram(ctx, owner, ledger.Some(ws.ID), in)
		assertCode(t, err, ledger.EInvalid, ledger.MsgCommissionRateCap)
		if after := count(`SELECT count(*) FROM programs`); after != before {
			t.Fatalf("%d programs after a refusal, %d before", after, before)
		}
	})
	t.Run("OKFirstProgramMakesTheWorkspace", func(t *testing.T) {
		// A user who belongs to no workspace: signed in, nothing else.
		fresh, err := b.accounts.AddMember(ctx, ws.ID, "fresh@new.example", ledger.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		b.db.Exec(`DELETE FROM memberships WHERE user_id = $1`, fresh)

		// A refused program makes no workspace either.
		_, err = b.programs.CreateMemberProgram(ctx, fresh, ledger.Input[int64]{}, ledger.ProgramInput{Name: ledger.Some("x")})
		assertCode(t, err, ledger.EInvalid, ledger.MsgProgramMissingFields)
		if n := count(`SELECT count(*) FROM memberships WHERE user_id = $1`, fresh); n != 0 {
			t.Fatalf("a refused program left %d memberships", n)
		}

		// Sent four times at once: one workspace, four programs in it.
		var wg sync.WaitGroup
		got := make([]*ledger.MemberProgram, 4)
		errs := make([]error, 4)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = b.programs.CreateMemberProgram(ctx, fresh, ledger.Input[int64]{},
					programNamed("New", "https://WWW.New.example/pricing"))
			}()
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if got[i].WorkspaceID != got[0].WorkspaceID || got[i].Role != ledger.RoleOwner || got[i].WorkspaceName != "www.new.example" {
				t.Fatalf("program %d: %+v", i, got[i])
			}
		}
		if n := count(`SELECT count(*) FROM memberships WHERE user_id = $1 AND role = 'owner'`, fresh); n != 1 {
			t.Fatalf("%d workspaces made for one user's first programs", n)
		}
		if n := count(`SELECT count(*) FROM programs WHERE workspace_id = $1`, got[0].WorkspaceID); n != 4 {
			t.Fatalf("%d programs in the new workspace", n)
		}
	})
}
