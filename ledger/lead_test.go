package ledger

import (
	"strings"
	"testing"
)

var (
	liveKey = &ProgramKey{ProgramID: 7, Mode: LiveKey}
	testKey = &ProgramKey{ProgramID: 7, Mode: TestKey}
)

const aClickID = "01jd8xq2v3w4y5z6a7b8c9d0ef"

func TestLeadInputValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		in   LeadInput
		key  *ProgramKey
		code string // "" for success
		msg  string
		want LeadRequest
	}{
		{desc: "OK server mode", key: liveKey,
			in:   LeadInput{ClickID: Some(aClickID), CustomerKey: Some("user-1"), Email: Some(" Ann@Example.COM ")},
			want: LeadRequest{Mode: LeadModeServer, ProgramID: 7, ClickID: aClickID, CustomerKey: "user-1", Email: "ann@example.com"}},
		{desc: "OK browser mode", in: LeadInput{ClickID: Some(aClickID), ProgramID: Some("0012")},
			want: LeadRequest{Mode: LeadModeBrowser, ClickID: aClickID, ProgramHint: "12"}},
		{desc: "OK browser mode, additional_data.program_id wins", in: LeadInput{ClickID: Some(aClickID), ProgramID: Some("12"), DataProgramID: Some("13")},
			want: LeadRequest{Mode: LeadModeBrowser, ClickID: aClickID, ProgramHint: "13"}},
		{desc: "OK server mode with only customer_key", key: liveKey, in: LeadInput{CustomerKey: Some("user-1")},
			want: LeadRequest{Mode: LeadModeServer, ProgramID: 7, CustomerKey: "user-1"}},
		{desc: "OK test key is a test call", key: testKey, in: LeadInput{CustomerKey: Some("u")},
			want: LeadRequest{Mode: LeadModeServer, ProgramID: 7, CustomerKey: "u", Test: true}},
		{desc: "OK test mode with own program id", key: liveKey,
			in:   LeadInput{CustomerKey: Some("u"), TestMode: Some(true), DataProgramID: Some("7"), AdditionalData: Some(struct{}{})},
			want: LeadRequest{Mode: LeadModeServer, ProgramID: 7, CustomerKey: "u", Test: true}},
		{desc: "OK event name from additional_data", in: LeadInput{ClickID: Some(aClickID), DataEventName: Some("signup")},
			want: LeadRequest{Mode: LeadModeBrowser, ClickID: aClickID, EventName: "signup"}},
		{desc: "OK 50 click_ids", in: LeadInput{ClickID: Some(aClickID), ClickIDs: Some(strings.Split(strings.Repeat("a,", 49)+"a", ","))},
			want: LeadRequest{Mode: LeadModeBrowser, ClickID: aClickID}},
		{desc: "OK empty strings are absent", in: LeadInput{ClickID: Some(aClickID), CustomerKey: Some(""), Email: Some("")},
			want: LeadRequest{Mode: LeadModeBrowser, ClickID: aClickID}},

		{desc: "ErrRequired neither", key: liveKey, in: LeadInput{Email: Some("a@b.example")}, code: EInvalid, msg: MsgLeadIDRequired},
		{desc: "ErrRequired empty strings", in: LeadInput{ClickID: Some(""), CustomerKey: Some("")}, code: EInvalid, msg: MsgLeadIDRequired},
		{desc: "ErrRequired before shapes", in: LeadInput{Email: BadInput[string]()}, code: EInvalid, msg: MsgLeadIDRequired},
		{desc: "ErrClickRequired browser with only key", in: LeadInput{CustomerKey: Some("u")}, code: EInvalid, msg: MsgLeadClickIDRequired},
		{desc: "ErrClickRequired before shapes", in: LeadInput{CustomerKey: BadInput[string]()}, code: EInvalid, msg: MsgLeadClickIDRequired},
		{desc: "ErrShape click_id type", in: LeadInput{ClickID: BadInput[string]()}, code: EInvalid, msg: MsgLeadClickID},
		{desc: "ErrShape click_id alphabet", in: LeadInput{ClickID: Some("abc def")}, code: EInvalid, msg: MsgLeadClickID},
		{desc: "ErrShape click_id length", in: LeadInput{ClickID: Some(strings.Repeat("a", 201))}, code: EInvalid, msg: MsgLeadClickID},
		{desc: "ErrShape customer_key length", key: liveKey, in: LeadInput{CustomerKey: Some(strings.Repeat("k", 256))}, code: EInvalid, msg: MsgLeadCustomerKey},
		{desc: "ErrShape customer_key control", key: liveKey, in: LeadInput{CustomerKey: Some("a\nb")}, code: EInvalid, msg: MsgLeadCustomerKey},
		{desc: "ErrShape customer_key blank", key: liveKey, in: LeadInput{CustomerKey: Some("   ")}, code: EInvalid, msg: MsgLeadCustomerKey},
		{desc: "ErrShape email", in: LeadInput{ClickID: Some(aClickID), Email: Some("not-an-email")}, code: EInvalid, msg: MsgEmail},
		{desc: "ErrShape email type", in: LeadInput{ClickID: Some(aClickID), Email: BadInput[string]()}, code: EInvalid, msg: MsgEmail},
		{desc: "ErrShape session_id", in: LeadInput{ClickID: Some(aClickID), SessionID: Some(strings.Repeat("s", 256))}, code: EInvalid, msg: MsgLeadSessionID},
		{desc: "ErrShape page_url", in: LeadInput{ClickID: Some(aClickID), PageURL: BadInput[string]()}, code: EInvalid, msg: MsgLeadPageURL},
		{desc: "ErrShape event_name", in: LeadInput{ClickID: Some(aClickID), EventName: Some(strings.Repeat("e", 101))}, code: EInvalid, msg: MsgLeadEventName},
		{desc: "ErrShape click_ids item", in: LeadInput{ClickID: Some(aClickID), ClickIDs: Some([]string{"ok", "not ok"})}, code: EInvalid, msg: MsgLeadClickIDs},
		{desc: "ErrShape click_ids count", in: LeadInput{ClickID: Some(aClickID), ClickIDs: Some(strings.Split(strings.Repeat("a,", 50)+"a", ","))}, code: EInvalid, msg: MsgLeadClickIDs},
		{desc: "ErrShape program_id", in: LeadInput{ClickID: Some(aClickID), ProgramID: BadInput[string]()}, code: EInvalid, msg: MsgLeadProgramID},
		{desc: "ErrShape has_attribution", in: LeadInput{ClickID: Some(aClickID), HasAttribution: BadInput[bool]()}, code: EInvalid, msg: MsgLeadHasAttribution},
		{desc: "ErrShape debug_mode", in: LeadInput{ClickID: Some(aClickID), DebugMode: BadInput[bool]()}, code: EInvalid, msg: MsgLeadDebugMode},
		{desc: "ErrShape additional_data", in: LeadInput{ClickID: Some(aClickID), AdditionalData: BadInput[struct{}]()}, code: EInvalid, msg: MsgLeadAdditionalData},
		{desc: "ErrShape test_mode", in: LeadInput{ClickID: Some(aClickID), TestMode: BadInput[bool]()}, code: EInvalid, msg: MsgLeadTestMode},
		{desc: "ErrShape additional_data.program_id", in: LeadInput{ClickID: Some(aClickID), DataProgramID: Some(strings.Repeat("9", 65))}, code: EInvalid, msg: MsgLeadDataProgramID},
		{desc: "ErrShape in body order", in: LeadInput{ClickID: Some("bad id"), Email: Some("bad")}, code: EInvalid, msg: MsgLeadClickID},
		{desc: "ErrShape before 403", key: liveKey, in: LeadInput{CustomerKey: Some("u"), Email: Some("bad"), TestMode: Some(true), DataProgramID: Some("8")}, code: EInvalid, msg: MsgEmail},
		{desc: "ErrForbidden test mode other program", key: liveKey,
			in: LeadInput{CustomerKey: Some("u"), TestMode: Some(true), DataProgramID: Some("8")}, code: EForbidden, msg: MsgProgramIDMismatch},
		{desc: "ErrForbidden program_id names no program", key: liveKey,
			in: LeadInput{CustomerKey: Some("u"), TestMode: Some(true), DataProgramID: Some("YOUR_PROGRAM_ID")}, code: EForbidden, msg: MsgProgramIDMismatch},
		{desc: "ErrForbidden test key other program", key: testKey,
			in: LeadInput{CustomerKey: Some("u"), DataProgramID: Some("8")}, code: EForbidden, msg: MsgProgramIDMismatch},
		{desc: "ErrForbidden live call other program", key: liveKey,
			in: LeadInput{ClickID: Some(aClickID), ProgramID: Some("8")}, code: EForbidden, msg: MsgProgramIDMismatch},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := tc.in.Validate(tc.key)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
				return
			}
			if ErrorCode(err) != tc.code || ErrorMessage(err) != tc.msg {
				t.Fatalf("err = %v, want %s %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestLeadRules(t *testing.T) {
	t.Parallel()
	t.Run("provisional only for browser leads on server_required", func(t *testing.T) {
		for _, tc := range []struct {
			mode, auth string
			want       bool
		}{
			{LeadModeBrowser, LeadServerRequired, true},
			{LeadModeBrowser, LeadBrowserAllowed, false},
			{LeadModeServer, LeadServerRequired, false},
			{LeadModeServer, LeadBrowserAllowed, false},
		} {
			if got := LeadIsProvisional(tc.mode, tc.auth); got != tc.want {
				t.Errorf("LeadIsProvisional(%s, %s) = %v", tc.mode, tc.auth, got)
			}
		}
	})
	t.Run("lead transition", func(t *testing.T) {
		if err := CheckLeadTransition(FunnelClick); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{FunnelLead, FunnelConversion} {
			err := CheckLeadTransition(s)
			if ErrorCode(err) != EInvalid || ErrorMessage(err) != "Customer status cannot be updated to lead. Current status: "+s {
				t.Errorf("%s: %v", s, err)
			}
		}
	})
	t.Run("funnel never moves back", func(t *testing.T) {
		for _, tc := range []struct{ from, to, want string }{
			{FunnelClick, FunnelLead, FunnelLead},
			{FunnelLead, FunnelLead, FunnelLead},
			{FunnelConversion, FunnelLead, FunnelConversion},
			{FunnelLead, FunnelConversion, FunnelConversion},
		} {
			if got := AdvanceFunnel(tc.from, tc.to); got != tc.want {
				t.Errorf("AdvanceFunnel(%s, %s) = %s", tc.from, tc.to, got)
			}
		}
	})
	t.Run("settled by", func(t *testing.T) {
		if SettledByMode(LeadModeServer) != SettledByServerLead || SettledByMode(LeadModeBrowser) != SettledByBrowserAllowed {
			t.Fatal("SettledByMode")
		}
	})
	t.Run("shapes", func(t *testing.T) {
		for s, want := range map[string]bool{aClickID: true, "test_lead_001": true, "a-b": true, "": false, "a b": false, "é": false} {
			if ValidClickIDShape(s) != want {
				t.Errorf("ValidClickIDShape(%q) != %v", s, want)
			}
		}
		for s, want := range map[string]bool{"user_123": true, "ユーザー": true, strings.Repeat("é", 255): true,
			strings.Repeat("é", 256): false, "": false, " ": false, "a\tb": false, "\xff": false} {
			if ValidCustomerKey(s) != want {
				t.Errorf("ValidCustomerKey(%q) != %v", s, want)
			}
		}
	})
}
