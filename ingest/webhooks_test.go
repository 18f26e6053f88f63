package ingest

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/partnertrack/partnertrack/ledger"
	"github.com/partnertrack/partnertrack/ledger/postgres"
)

func TestWebhookRoutes(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	admin := dashboardMemberToken(t, b, w, "admin")
	member := dashboardMemberToken(t, b, w, "member")
	path := "/api/v1/programs/" + itoa(w.programID) + "/webhooks"
	hook := map[string]any{"url": "https://93.184.215.14/hooks", "events": []string{"sale.created", "commission.reversed"}}

	var created int64
	t.Run("OKOwnerCreatesAndSeesTheSecretOnce", func(t *testing.T) {
		d := mustOK(t, do(t, b.app, req{"POST", path, hook, bearer(w.ownerToken)}), 201)
		secret, _ := d["secret"].(string)
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
			t.Fatalf("secret %q", secret)
		}
		if d["url"] != hook["url"] || len(d["events"].([]any)) != 2 || id(d["program_id"]) != w.programID {
			t.Fatalf("created %v", d)
		}
		created = id(d["id"])
		r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
		if r.Status != 200 || strings.Contains(string(r.Raw), secret) || strings.Contains(string(r.Raw), `"secret"`) {
			t.Fatalf("listing shows the secret: %s", r.Raw)
		}
	})
	t.Run("OKAdminCreates", func(t *testing.T) {
		mustOK(t, do(t, b.app, req{"POST", path, map[string]any{"url": "https://93.184.215.14/admin", "events": []string{"lead.created"}}, bearer(admin)}), 201)
	})
	t.Run("Refusals", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			method  string
			path    string
			header  map[string]string
			status  int
			message string
		}{
			{"ErrMemberCreates", "POST", path, bearer(member), 403, ledger.MsgWebhookManage},
			{"ErrMemberLists", "GET", path, bearer(member), 403, ledger.MsgWebhookManage},
			{"ErrMemberDeletes", "DELETE", path + "/" + itoa(created), bearer(member), 403, ledger.MsgWebhookManage},
			{"ErrOtherWorkspace", "POST", path, bearer(other.ownerToken), 403, "you are not a member of this program's workspace"},
			{"ErrNoToken", "POST", path, nil, 401, "Authentication required"},
			{"ErrProgramKey", "GET", path, bearer(w.liveKey), 401, "invalid or expired token"},
			{"ErrNoProgram", "POST", "/api/v1/programs/999999/webhooks", bearer(w.ownerToken), 404, "program not found"},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				assertError(t, do(t, b.app, req{tc.method, tc.path, hook, tc.header}), tc.status, tc.message)
			})
		}
	})
	t.Run("ErrValidation", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			body    any
			message string
		}{
			{"NotJSON", "url=x", msgNotJSON},
			{"NoURL", map[string]any{"events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"URLNotString", map[string]any{"url": 5, "events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"RelativeURL", map[string]any{"url": "/hooks", "events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"FTP", map[string]any{"url": "ftp://93.184.215.14/x", "events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"Credentials", map[string]any{"url": "https://u:p@93.184.215.14/x", "events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"TooLong", map[string]any{"url": "https://93.184.215.14/" + strings.Repeat("a", 2048), "events": []string{"sale.created"}}, ledger.MsgWebhookURL},
			{"NoEvents", map[string]any{"url": "https://93.184.215.14/x"}, ledger.MsgWebhookEvents},
			{"EmptyEvents", map[string]any{"url": "https://93.184.215.14/x", "events": []string{}}, ledger.MsgWebhookEvents},
			{"EventsNotArray", map[string]any{"url": "https://93.184.215.14/x", "events": "sale.created"}, ledger.MsgWebhookEvents},
			{"UnknownEvent", map[string]any{"url": "https://93.184.215.14/x", "events": []string{"sale.created", "payout.sent"}}, ledger.MsgWebhookEvents},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				assertError(t, do(t, b.app, req{"POST", path, tc.body, bearer(w.ownerToken)}), 400, tc.message)
			})
		}
	})
	t.Run("ErrSSRF", func(t *testing.T) {
		for _, url := range []string{
			"http://127.0.0.1:8080/hooks", "http://localhost/hooks", "http://[::1]/hooks", "http://10.1.2.3/hooks",
			"http://192.168.0.10/hooks", "http://172.16.5.4/hooks", "http://169.254.169.254/latest/meta-data",
			"http://[fe80::1]/hooks", "http://0.0.0.0/hooks", "http://[::ffff:10.0.0.1]/hooks", "http://100.64.1.1/hooks",
		} {
			t.Run(url, func(t *testing.T) {
				assertError(t, do(t, b.app, req{"POST", path, map[string]any{"url": url, "events": []string{"sale.created"}}, bearer(w.ownerToken)}),
					400, ledger.MsgWebhookPrivate)
			})
		}
		var n int
		b.db.QueryRow(`SELECT count(*) FROM webhook_endpoints WHERE url NOT LIKE 'https://93.184.215.14/%'`).Scan(&n)
		if n != 0 {
			t.Fatalf("%d refused endpoints stored", n)
		}
	})
	t.Run("OKListWithDeliveries", func(t *testing.T) {
		hooks := postgres.NewWebhookService(b.db.DB, nil)
		status := 502
		for i := 1; i <= 2; i++ {
			if err := hooks.LogWebhookAttempt(context.Background(), ledger.WebhookAttempt{EndpointID: created, MessageID: "msg_1",
				EventType: "sale.created", Attempt: i, StatusCode: &status, LatencyMS: 12, Error: "receiver answered HTTP 502"}); err != nil {
				t.Fatal(err)
			}
		}
		ok := 200
		hooks.LogWebhookAttempt(context.Background(), ledger.WebhookAttempt{EndpointID: created, MessageID: "msg_1",
			EventType: "sale.created", Attempt: 3, StatusCode: &ok, LatencyMS: 8})
		r := do(t, b.app, req{"GET", path, nil, bearer(admin)})
		list, _ := r.Body["data"].([]any)
		if r.Status != 200 || len(list) != 2 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		first := list[0].(map[string]any)
		ds := first["deliveries"].([]any)
		if id(first["id"]) != created || len(ds) != 3 {
			t.Fatalf("endpoint %v", first)
		}
		latest := ds[0].(map[string]any)
		oldest := ds[2].(map[string]any)
		if latest["attempt"] != 3.0 || latest["status_code"] != 200.0 || latest["succeeded"] != true || latest["error"] != nil ||
			latest["latency_ms"] != 8.0 || latest["message_id"] != "msg_1" || latest["event_type"] != "sale.created" ||
			oldest["status_code"] != 502.0 || oldest["succeeded"] != false || oldest["error"] != "receiver answered HTTP 502" {
			t.Fatalf("deliveries %v", ds)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		otherPath := "/api/v1/programs/" + itoa(other.programID) + "/webhooks/" + itoa(created)
		assertError(t, do(t, b.app, req{"DELETE", otherPath, nil, bearer(other.ownerToken)}), 404, ledger.MsgWebhookNotFound)
		d := mustOK(t, do(t, b.app, req{"DELETE", path + "/" + itoa(created), nil, bearer(w.ownerToken)}), 200)
		if id(d["id"]) != created || d["deleted"] != true {
			t.Fatalf("deleted %v", d)
		}
		assertError(t, do(t, b.app, req{"DELETE", path + "/" + itoa(created), nil, bearer(w.ownerToken)}), 404, ledger.MsgWebhookNotFound)
		assertError(t, do(t, b.app, req{"DELETE", path + "/abc", nil, bearer(w.ownerToken)}), 404, "webhook not found")
		r := do(t, b.app, req{"GET", path, nil, bearer(w.ownerToken)})
		if list := r.Body["data"].([]any); len(list) != 1 {
			t.Fatalf("after delete: %s", r.Raw)
		}
	})
}

// TestProgramNotificationsRoute reads the advertiser's warnings of a
// program from the dashboard.
func TestProgramNotificationsRoute(t *testing.T) {
	b := setup(t)
	w := MustWorld(t, b.app)
	other := MustWorld(t, b.app)
	member := dashboardMemberToken(t, b, w, "member")
	store := postgres.NewNotificationStore(b.db.DB)
	ws := w.workspaceID
	for i, p := range []int64{w.programID, other.programID} {
		if _, err := store.SaveNotification(context.Background(), int64(i+1), ledger.Notification{WorkspaceID: &ws,
			Kind: ledger.NoticeManualReview, Title: "Refund on a commission already paid out", Body: "Review it.",
			Data: map[string]any{"program_id": p, "commission_id": 9}}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/api/v1/programs/" + itoa(w.programID) + "/notifications"
	r := do(t, b.app, req{"GET", path, nil, bearer(member)})
	list, _ := r.Body["data"].([]any)
	if r.Status != 200 || len(list) != 1 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	n := list[0].(map[string]any)
	if n["kind"] != ledger.NoticeManualReview || n["title"] == "" || n["read_at"] != nil || n["data"].(map[string]any)["commission_id"] != 9.0 {
		t.Fatalf("notification %v", n)
	}
	assertError(t, do(t, b.app, req{"GET", path, nil, bearer(other.ownerToken)}), 403, "you are not a member of this program's workspace")
	assertError(t, do(t, b.app, req{"GET", path, nil, nil}), 401, "Authentication required")
	assertError(t, do(t, b.app, req{"GET", "/api/v1/programs/999999/notifications", nil, bearer(member)}), 404, "program not found")
}
