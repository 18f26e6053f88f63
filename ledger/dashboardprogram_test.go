package ledger

import (
	"strings"
	"testing"
)

func TestChooseProgramWorkspace(t *testing.T) {
	owner := func(id int64) Membership { return Membership{WorkspaceID: id, Role: RoleOwner} }
	admin := func(id int64) Membership { return Membership{WorkspaceID: id, Role: RoleAdmin} }
	member := func(id int64) Membership { return Membership{WorkspaceID: id, Role: RoleMember} }
	tests := []struct {
		desc        string
		memberships []Membership
		requested   Input[int64]
		want        WorkspaceChoice
		code, msg   string
	}{
		{"OKNoWorkspaceCreatesOne", nil, Input[int64]{}, WorkspaceChoice{Create: true}, "", ""},
		{"OKOneOwnedIsUsed", []Membership{owner(4)}, Input[int64]{}, WorkspaceChoice{WorkspaceID: 4}, "", ""},
		{"OKOneAdministeredBesideMemberships", []Membership{member(2), admin(7), member(9)}, Input[int64]{}, WorkspaceChoice{WorkspaceID: 7}, "", ""},
		{"OKRequestedOwned", []Membership{owner(4), owner(5)}, Some[int64](5), WorkspaceChoice{WorkspaceID: 5}, "", ""},
		{"OKRequestedAdministered", []Membership{owner(4), admin(5)}, Some[int64](5), WorkspaceChoice{WorkspaceID: 5}, "", ""},
		{"ErrTwoManagedNeedAChoice", []Membership{owner(4), admin(5)}, Input[int64]{}, WorkspaceChoice{}, EInvalid, MsgWorkspaceRequired},
		{"OKMemberOnlyGetsItsOwn", []Membership{member(4)}, Input[int64]{}, WorkspaceChoice{Create: true}, "", ""},
		{"ErrRequestedAsMember", []Membership{owner(4), member(5)}, Some[int64](5), WorkspaceChoice{}, EForbidden, MsgProgramCreate},
		{"ErrRequestedElsewhere", []Membership{owner(4)}, Some[int64](99), WorkspaceChoice{}, ENotFound, MsgWorkspaceNotFound},
		{"ErrRequestedWithoutAnyWorkspace", nil, Some[int64](4), WorkspaceChoice{}, ENotFound, MsgWorkspaceNotFound},
		{"ErrRequestedNotANumber", []Membership{owner(4)}, BadInput[int64](), WorkspaceChoice{}, EInvalid, MsgWorkspaceIDShape},
		{"ErrRequestedZero", []Membership{owner(4)}, Some[int64](0), WorkspaceChoice{}, EInvalid, MsgWorkspaceIDShape},
		{"ErrRequestedNegative", nil, Some[int64](-4), WorkspaceChoice{}, EInvalid, MsgWorkspaceIDShape},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := ChooseProgramWorkspace(tt.memberships, tt.requested)
			if tt.code == "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if ErrorCode(err) != tt.code || ErrorMessage(err) != tt.msg || got != (WorkspaceChoice{}) {
				t.Fatalf("got %+v, %v; want %s %q", got, err, tt.code, tt.msg)
			}
		})
	}
}

func TestWorkspaceNameFor(t *testing.T) {
	if got := WorkspaceNameFor(Program{Name: "Acme", Domain: "shop.acme.example"}); got != "shop.acme.example" {
		t.Fatalf("name %q", got)
	}
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	if got := WorkspaceNameFor(Program{Name: "Acme", Domain: long}); len(got) != 200 || !strings.HasPrefix(long, got) {
		t.Fatalf("a 253-character domain names the workspace %q (%d)", got, len(got))
	}
}

func TestWebhookDeliveryLimit(t *testing.T) {
	tests := []struct {
		desc string
		in   Input[int64]
		want int
		err  bool
	}{
		{"OKAbsentIsTheDefault", Input[int64]{}, DefaultWebhookDeliveries, false},
		{"OKOne", Some[int64](1), 1, false},
		{"OKHundred", Some[int64](100), 100, false},
		{"ErrZero", Some[int64](0), 0, true},
		{"ErrOverHundred", Some[int64](101), 0, true},
		{"ErrNotANumber", BadInput[int64](), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := WebhookDeliveryLimit(tt.in)
			if tt.err {
				if ErrorCode(err) != EInvalid || ErrorMessage(err) != MsgWebhookDeliveryLimit {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestWebhookDeliveryStatus(t *testing.T) {
	if (WebhookDelivery{Succeeded: true}).Status() != DeliverySucceeded || (WebhookDelivery{}).Status() != DeliveryFailed {
		t.Fatal("delivery status")
	}
}
