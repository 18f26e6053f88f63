package ledger

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestCLILoginStateMachine(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	expires := created.Add(CLILoginTTL)
	user := int64(7)
	login := func(st CLILoginState) *CLILogin {
		l := &CLILogin{State: st, CreatedAt: created, ExpiresAt: expires, UserCode: "BCDFGHJK", Confirmed: true}
		if st != CLILoginPending {
			l.UserID = &user
		}
		return l
	}
	cases := []struct {
		desc         string
		login        *CLILogin
		at           time.Time
		wantPoll     string
		wantPollErr  string // message
		wantCallback string // message, "" for allowed
	}{
		{desc: "OK pending before sign-in", login: login(CLILoginPending), at: created.Add(time.Minute),
			wantPoll: PollPending},
		{desc: "OK pending a microsecond before expiry", login: login(CLILoginPending), at: expires.Add(-time.Microsecond),
			wantPoll: PollPending},
		{desc: "OK complete on the first poll after sign-in", login: login(CLILoginSignedIn), at: created.Add(2 * time.Minute),
			wantPoll: PollComplete, wantCallback: MsgCLISessionNotFoundUsed},
		{desc: "Expired at exactly five minutes", login: login(CLILoginPending), at: expires,
			wantPoll: PollExpired, wantCallback: MsgCLISessionExpired},
		{desc: "Expired after five minutes", login: login(CLILoginPending), at: expires.Add(time.Hour),
			wantPoll: PollExpired, wantCallback: MsgCLISessionExpired},
		{desc: "Expired when signed in but never polled in time", login: login(CLILoginSignedIn), at: expires.Add(time.Second),
			wantPoll: PollExpired, wantCallback: MsgCLISessionNotFoundUsed},
		{desc: "ErrConsumed on a re-poll", login: login(CLILoginConsumed), at: created.Add(3 * time.Minute),
			wantPollErr: MsgCLISessionConsumed, wantCallback: MsgCLISessionNotFoundUsed},
		{desc: "ErrConsumed stays consumed after expiry", login: login(CLILoginConsumed), at: expires.Add(time.Hour),
			wantPollErr: MsgCLISessionConsumed, wantCallback: MsgCLISessionNotFoundUsed},
		{desc: "ErrNotFound", login: nil, at: created,
			wantPollErr: MsgCLISessionNotFound, wantCallback: MsgCLISessionNotFoundUsed},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			got, err := c.login.Poll(c.at)
			if c.wantPollErr != "" {
				if ErrorMessage(err) != c.wantPollErr {
					t.Fatalf("Poll: %v, want %q", err, c.wantPollErr)
				}
			} else if err != nil || got != c.wantPoll {
				t.Fatalf("Poll = %q, %v; want %q", got, err, c.wantPoll)
			}
			err = c.login.CheckCallback(c.at)
			if ErrorMessage(err) != c.wantCallback {
				t.Fatalf("CheckCallback: %v, want %q", err, c.wantCallback)
			}
		})
	}
	// The callback takes state and id_token alone (the contract): the page,
	// not the callback, asks for the confirmation. Only the login's own
	// code confirms it.
	unconfirmed := &CLILogin{State: CLILoginPending, CreatedAt: created, ExpiresAt: expires, UserCode: "BCDFGHJK"}
	if err := unconfirmed.CheckCallback(created); err != nil {
		t.Fatalf("unconfirmed callback: %v", err)
	}
	if err := unconfirmed.CheckConfirm("bcdf-ghjk", created); err != nil {
		t.Fatalf("confirm with the code as typed: %v", err)
	}
	if err := unconfirmed.CheckConfirm("BCDF-GHJL", created); ErrorMessage(err) != MsgCLIUserCodeMismatch {
		t.Fatalf("confirm with another code: %v", err)
	}
	if err := unconfirmed.CheckConfirm("BCDFGHJK", expires); ErrorMessage(err) != MsgCLISessionExpired {
		t.Fatalf("confirm after expiry: %v", err)
	}
	// Status codes of the refusals: 404 for unknown or used, 400 otherwise.
	if code := ErrorCode((*CLILogin)(nil).CheckCallback(created)); code != ENotFound {
		t.Fatalf("unknown session callback code %s", code)
	}
	if code := ErrorCode(login(CLILoginPending).CheckCallback(expires)); code != EInvalid {
		t.Fatalf("expired callback code %s", code)
	}
	if _, err := login(CLILoginConsumed).Poll(created); ErrorCode(err) != EInvalid {
		t.Fatalf("consumed poll code %s", ErrorCode(err))
	}
	if _, err := (*CLILogin)(nil).Poll(created); ErrorCode(err) != ENotFound {
		t.Fatalf("unknown poll code %s", ErrorCode(err))
	}
}

func TestResolveAdvertiser(t *testing.T) {
	t.Parallel()
	roles := []AdvertiserRole{{WorkspaceID: 9, Role: RoleAdmin}, {WorkspaceID: 12, Role: RoleOwner}, {WorkspaceID: 4, Role: RoleOwner}, {WorkspaceID: 2, Role: RoleMember}}
	cases := []struct {
		desc      string
		roles     []AdvertiserRole
		requested Input[int64]
		want      int64
		wantErr   string
	}{
		{desc: "OK the oldest owned workspace", roles: roles, want: 4},
		{desc: "OK an administered workspace when none is owned", roles: []AdvertiserRole{{20, RoleAdmin}, {8, RoleAdmin}}, want: 8},
		{desc: "OK a requested owned workspace", roles: roles, requested: Some(int64(12)), want: 12},
		{desc: "OK a requested administered workspace", roles: roles, requested: Some(int64(9)), want: 9},
		{desc: "ErrMismatch a member-only workspace", roles: roles, requested: Some(int64(2)), wantErr: MsgCLIAdvertiserMismatch},
		{desc: "ErrMismatch another workspace", roles: roles, requested: Some(int64(99)), wantErr: MsgCLIAdvertiserMismatch},
		{desc: "ErrMismatch a malformed id", roles: roles, requested: BadInput[int64](), wantErr: MsgCLIAdvertiserMismatch},
		{desc: "ErrNoAdvertiser member only", roles: []AdvertiserRole{{3, RoleMember}}, wantErr: MsgCLINoAdvertiser},
		{desc: "ErrNoAdvertiser no workspace, even when one is requested", requested: Some(int64(3)), wantErr: MsgCLINoAdvertiser},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			got, err := ResolveAdvertiser(c.roles, c.requested)
			if c.wantErr != "" {
				if ErrorMessage(err) != c.wantErr || ErrorCode(err) != EForbidden {
					t.Fatalf("err %v, want 403 %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestCommissionText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		desc     string
		typ      CommissionType
		rate     string
		months   int
		currency Currency
		want     string
	}{
		{"recurring percent with a duration", RecurringPercent, "30", 12, USD, "30% recurring (12 months)"},
		{"recurring percent for life", RecurringPercent, "12.5", 0, USD, "12.5% recurring (lifetime)"},
		{"recurring one month", RecurringPercent, "5", 1, USD, "5% recurring (1 month)"},
		{"one-time percent", Percent, "20", 0, EUR, "20% one-time"},
		{"fixed in the program currency", Fixed, "25", 0, EUR, "25.00 EUR one-time"},
		{"recurring fixed in VND", RecurringFixed, "50000", 6, VND, "50000 VND recurring (6 months)"},
		{"fixed without a currency is USD", Fixed, "9.5", 0, "", "9.50 USD one-time"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			if got := CommissionText(c.typ, decimal.RequireFromString(c.rate), c.months, c.currency); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestMsgInvalidEventType(t *testing.T) {
	t.Parallel()
	if got := MsgInvalidEventType("purchase"); got != "Invalid event_type: purchase. Valid: click, lead, sale" {
		t.Fatalf("got %q", got)
	}
	for _, v := range []string{"click", "lead", "sale"} {
		if !ValidTestEventType(v) {
			t.Fatalf("%s refused", v)
		}
	}
	for _, v := range []string{"chain", "", "Click", "conversion"} {
		if ValidTestEventType(v) {
			t.Fatalf("%q accepted", v)
		}
	}
}
