package reliability

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partnertrack/partnertrack/ledger/stripetest"
)

// The end-to-end variants of the ledger's concurrency tests
// (ledger/postgres TestConcurrentDuplicateSales, TestConcurrentRefunds,
// TestConcurrentSettlement): the same races, through the real edge and
// worker over HTTP.

// together runs fn(i) for i in [0, n) in n goroutines released at once,
// and waits for them.
func together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			fn(i)
		}(i)
	}
	close(start)
	wg.Wait()
}

// TestRaceDuplicateTransactionID: many callers send a sale with one
// transaction_id at the same moment, from the keys of several programs
// (the id is unique across programs). Exactly one is recorded (200); every
// other call answers 409 duplicate_transaction naming the winner's sale.
func TestRaceDuplicateTransactionID(t *testing.T) {
	t.Parallel()
	sc := report(t, "race/duplicate-transaction-id")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	const callers = 16
	rounds := scale(6, 100)
	// Each round calls every key callers/len(ws) times: at most 120 a
	// minute per key.
	ws := mustWorlds(t, e.client, scale(4, 16), nil)
	clicks := make([]string, len(ws))
	for i, w := range ws {
		clicks[i] = mustClick(t, e.client, w)
	}
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	st.waitCount(t, len(ws), time.Minute, `SELECT count(*) FROM clicks`)

	var answers tally
	accepted := 0
	for r := 0; r < rounds; r++ {
		txn := fmt.Sprintf("dup-%d", r)
		reps := make([]reply, callers)
		together(callers, func(i int) {
			k := i % len(ws)
			rep, err := e.call(req{method: "POST", path: "/api/v1/track/sale", token: ws[k].LiveKey,
				body: map[string]any{"transaction_id": txn, "amount_cents": 1000 + i, "click_id": clicks[k]}})
			if err != nil {
				t.Errorf("%s: %v", txn, err)
			}
			reps[i] = rep
		})
		var winner float64
		for _, rep := range reps {
			answers.add(rep.Status)
			if rep.Status == 200 {
				accepted++
				winner, _ = rep.Body["sale_id"].(float64)
			}
		}
		for i, rep := range reps {
			switch rep.Status {
			case 200:
			case 409:
				e := rep.errObj()
				details, _ := e["details"].(map[string]any)
				if e["code"] != "duplicate_transaction" || details["sale_id"] != winner {
					t.Errorf("%s caller %d: %s (winner sale %v)", txn, i, rep, winner)
				}
			default:
				t.Errorf("%s caller %d: %s", txn, i, rep)
			}
		}
		if n := st.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = $1`, txn); n != 1 {
			t.Errorf("%s stored %d times", txn, n)
		}
	}
	stored := st.count(t, `SELECT count(*) FROM sales`)
	sc.counts(accepted, stored)
	sc.note("%d rounds of %d callers: %s", rounds, callers, answers.String())
	if accepted != rounds || stored != rounds {
		t.Errorf("%d accepted, %d stored, want one per round (%d)", accepted, stored, rounds)
	}
}

// TestRaceConcurrentRefunds: partial refunds of one sale, each sent twice
// at the same moment (a client retrying), and full refunds of another
// sale sent together. Each refund_id applies once; the amounts add up to
// the sale and reverse the commission; the deductions from the partner's
// credited balance add up to the commission, which leaves the balance at
// zero. Of the full refunds, one reverses and the others skip.
func TestRaceConcurrentRefunds(t *testing.T) {
	t.Parallel()
	sc := report(t, "race/concurrent-refunds")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	w := mustWorld(t, e.client, nil)
	const parts = 20 // partial refunds of 500 cents of a 10,000-cent sale
	a, b := mustClick(t, e.client, w), mustClick(t, e.client, w)
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	st.waitCount(t, 2, time.Minute, `SELECT count(*) FROM clicks`)
	var commissions [2]int64
	for i, click := range []string{a, b} {
		rep := e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
			body: map[string]any{"transaction_id": "refund-race-" + itoa(int64(i)), "amount_cents": 10000, "click_id": click}})
		commissions[i] = num(rep.Body["commission_id"])
		// Credited to the balance first, so that refunds deduct from it.
		e.must(t, 200, req{method: "POST", path: "/api/operator/v1/commissions/" + itoa(commissions[i]) + "/approve", token: opToken})
	}

	var partial tally
	var mu sync.Mutex
	deducted := 0.0
	together(2*parts, func(i int) {
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/refund", token: w.LiveKey,
			body: map[string]any{"transaction_id": "refund-race-0", "refund_amount_cents": 500, "refund_id": "r" + itoa(int64(i%parts)), "reason": "refund"}})
		if err != nil {
			t.Errorf("refund: %v", err)
			return
		}
		partial.add(rep.Status)
		mu.Lock()
		defer mu.Unlock()
		switch rep.Body["status"] {
		case "refunded", "reversed":
			deducted += rep.Body["deductionAmount"].(float64)
		case "skipped":
			if rep.Body["reason"] != "refund_id already applied" && rep.Body["reason"] != "already reversed" {
				t.Errorf("skipped for %v", rep.Body["reason"])
			}
		default:
			t.Errorf("refund: %s", rep)
		}
	})
	full := map[any]int{}
	together(parts, func(i int) {
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/refund", token: w.LiveKey,
			body: map[string]any{"transaction_id": "refund-race-1", "reason": "chargeback"}})
		if err != nil {
			t.Errorf("refund: %v", err)
			return
		}
		mu.Lock()
		full[rep.Body["status"]]++
		mu.Unlock()
	})

	applied := st.count(t, `SELECT count(*) FROM refunds r JOIN sales s ON s.id = r.sale_id WHERE s.processor_event_id = 'refund-race-0'`)
	sc.counts(parts+1, applied+st.count(t, `SELECT count(*) FROM refunds r JOIN sales s ON s.id = r.sale_id WHERE s.processor_event_id = 'refund-race-1'`))
	sc.note("%d partial refunds each sent twice: %s; %d full refunds at once: %v", parts, partial.String(), parts, full)
	if applied != parts {
		t.Errorf("%d partial refunds applied, want %d", applied, parts)
	}
	if s := st.count(t, `SELECT refunded_cents FROM sales WHERE processor_event_id = 'refund-race-0'`); s != 10000 {
		t.Errorf("refunded %d cents of 10000", s)
	}
	if deducted < 19.999 || deducted > 20.001 { // 20% of 100.00
		t.Errorf("deductions add up to %v, want the whole commission 20", deducted)
	}
	if full["reversed"] != 1 || full["skipped"] != parts-1 {
		t.Errorf("full refunds: %v, want one reversed and the rest skipped", full)
	}
	for _, id := range commissions {
		if s := st.count(t, `SELECT count(*) FROM commissions WHERE id = $1 AND status = 'reversed' AND amount_minor = 0`, id); s != 1 {
			t.Errorf("commission %d is not reversed to 0", id)
		}
	}
	// Credits 2 × 2000, deductions 2 × 2000: the balance is back at zero.
	if bal := st.count(t, `SELECT coalesce(sum(amount_minor), 0) FROM balance_entries WHERE partner_id = $1`, w.PartnerID); bal != 0 {
		t.Errorf("partner balance %d after every commission was reversed", bal)
	}
}

// TestRaceKeyRegeneration: sales pour in with a program's key on two edge
// instances while the owner regenerates the key through one of them. No
// request sent after the regenerate call returned authenticates with the
// old key (401 Invalid API token on both instances); the new key works at
// once; every sale answered 200 is stored and no other.
func TestRaceKeyRegeneration(t *testing.T) {
	t.Parallel()
	sc := report(t, "race/key-regeneration-under-load")
	st := sharedStack(t)
	edges := []*edge{st.startEdge(t, nil), st.startEdge(t, nil)}
	rounds := scale(3, 30)
	var answers tally
	accepted, late := 0, 0
	for r := 0; r < rounds; r++ {
		w := mustWorld(t, edges[0].client, nil)
		type result struct {
			began, ended time.Time
			status       int
			txn          string
		}
		var mu sync.Mutex
		var results []result
		var regenerated time.Time
		var newKey string
		var count int
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			// At most 100 calls with the old key: its limit is 120 a minute.
			// The last 40 wait for the regeneration, so that some are
			// sure to begin after it however slow the machine.
			runUntil(6, stop, func(i int) {
				mu.Lock()
				if count >= 100 || (count >= 60 && regenerated.IsZero()) {
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					return
				}
				count++
				mu.Unlock()
				txn := fmt.Sprintf("rot-%d-%d", r, i)
				began := time.Now()
				rep, err := edges[i%2].call(req{method: "POST", path: "/api/v1/track/sale", token: w.LiveKey,
					body: map[string]any{"transaction_id": txn, "amount_cents": 100, "additional_data": map[string]any{"test_mode": true}}})
				status := rep.Status
				if err != nil {
					status = 0
				}
				mu.Lock()
				results = append(results, result{began, time.Now(), status, txn})
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			})
		}()
		// Regenerate in the middle of the load.
		waitLoad(t, "40 calls with the old key", func() bool { mu.Lock(); defer mu.Unlock(); return count >= 40 })
		rep := edges[0].must(t, 200, req{method: "POST", path: "/api/v1/programs/" + itoa(w.ProgramID) + "/api-key", token: w.OwnerToken})
		mu.Lock()
		regenerated = time.Now()
		mu.Unlock()
		newKey = rep.data()["api_key"].(string)
		// The new key works at once, on both instances.
		for _, e := range edges {
			e.must(t, 200, req{method: "POST", path: "/api/v1/track/sale", token: newKey,
				body: map[string]any{"transaction_id": fmt.Sprintf("rot-new-%d-%s", r, e.Addr), "amount_cents": 100, "additional_data": map[string]any{"test_mode": true}}})
			accepted++
		}
		waitLoad(t, "100 calls with the old key", func() bool { mu.Lock(); defer mu.Unlock(); return count >= 100 })
		close(stop)
		<-done

		ok := map[string]bool{}
		for _, res := range results {
			answers.add(res.status)
			switch {
			case res.status == 200:
				ok[res.txn] = true
				accepted++
				if res.began.After(regenerated) {
					t.Errorf("round %d: a sale sent %s after the regeneration authenticated with the old key", r, res.began.Sub(regenerated))
				}
			case res.status == 401:
				if res.began.After(regenerated) {
					late++
				}
			default:
				t.Errorf("round %d: %s answered %d", r, res.txn, res.status)
			}
		}
		if late == 0 && r == rounds-1 {
			t.Errorf("no call with the old key was made after the regeneration: the race was not run")
		}
		for txn := range ok {
			if st.count(t, `SELECT count(*) FROM sales WHERE processor_event_id = $1`, txn) != 1 {
				t.Errorf("sale %s answered 200 but is not stored", txn)
			}
		}
	}
	stored := st.count(t, `SELECT count(*) FROM sales`)
	sc.counts(accepted, stored)
	sc.note("%d regenerations under load on 2 edges: old key %s; %d calls with the old key after the regeneration, all refused", rounds, answers.String(), late)
	if stored != accepted {
		t.Errorf("stored %d sales, answered 200 to %d", stored, accepted)
	}
}

// TestRaceConcurrentLeadSettlements: a browser lead waits as provisional
// on a program that requires server-verified leads; server leads for the
// customer, more browser leads, and a Stripe payment of that customer
// (processed by the worker) all arrive at once. The lead settles exactly
// once, in place; every other server lead is refused with the spec's
// "Customer status cannot be updated to lead. Current status: lead" (or
// "…: conversion" once the worker has processed the payment).
func TestRaceConcurrentLeadSettlements(t *testing.T) {
	t.Parallel()
	sc := report(t, "race/concurrent-lead-settlements")
	st := sharedStack(t)
	const secret = "whsec_reliability_connect_secret"
	e := st.startEdge(t, map[string]string{"STRIPE_WEBHOOK_SECRET": secret})
	st.startWorker(t, []string{"--concurrency", "4"}, nil)
	w := mustWorld(t, e.client, nil) // lead_auth server_required by default
	const account = "acct_1ReliabilityRace"
	e.must(t, 200, req{method: "POST", path: "/api/operator/v1/programs/" + itoa(w.ProgramID) + "/processor-account", token: opToken,
		body: map[string]any{"account_id": account}})
	rounds := scale(3, 20)
	const callers = 8
	var answers tally
	settled := 0
	for r := 0; r < rounds; r++ {
		click := mustClick(t, e.client, w)
		key := fmt.Sprintf("user-%d", r)
		rep := e.must(t, 200, req{method: "POST", path: "/api/v1/track/lead", body: map[string]any{"click_id": click, "customer_key": key},
			header: map[string]string{"X-Forwarded-For": nextIP()}})
		if rep.Body["provisional"] != true {
			t.Fatalf("browser lead: %s", rep)
		}
		ev := stripetest.CheckoutCompleted(account).Set("metadata.svc_click_id", click).Set("metadata.svc_customer_key", key)
		payload := ev.Payload()
		var serverSettled sync.Map
		together(callers+1, func(i int) {
			var rep reply
			var err error
			switch {
			case i == callers:
				rep, err = e.call(req{method: "POST", path: "/api/v1/webhooks/stripe", body: payload,
					header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, secret, time.Now())}})
				if err == nil && rep.Status != 200 {
					t.Errorf("stripe event: %s", rep)
				}
				return
			case i%2 == 0:
				rep, err = e.call(req{method: "POST", path: "/api/v1/track/lead", token: w.LiveKey,
					body: map[string]any{"click_id": click, "customer_key": key}, header: map[string]string{"X-Forwarded-For": nextIP()}})
			default:
				rep, err = e.call(req{method: "POST", path: "/api/v1/track/lead",
					body: map[string]any{"click_id": click, "customer_key": key}, header: map[string]string{"X-Forwarded-For": nextIP()}})
			}
			if err != nil {
				t.Errorf("lead: %v", err)
				return
			}
			answers.add(rep.Status)
			switch {
			case rep.Status == 200:
				if i%2 == 0 {
					serverSettled.Store(i, true)
				}
			case rep.Status == 400 && rep.errObj()["message"] == "Customer status cannot be updated to lead. Current status: lead":
			// On a slow machine the worker may process the payment before
			// this lead reaches the edge: the customer is then converted.
			case rep.Status == 400 && rep.errObj()["message"] == "Customer status cannot be updated to lead. Current status: conversion":
			default:
				t.Errorf("lead %d: %s", i, rep)
			}
		})
		// The payment is processed by the worker; then nothing is pending.
		st.waitCount(t, 1, time.Minute, `SELECT count(*) FROM processor_events WHERE event_id = $1 AND status <> 'received'`, ev.ID)
		leads := st.count(t, `SELECT count(*) FROM leads l JOIN customers c ON c.id = l.customer_id WHERE c.click_id = $1`, click)
		ok := st.count(t, `SELECT count(*) FROM leads l JOIN customers c ON c.id = l.customer_id
			WHERE c.click_id = $1 AND l.settled_at IS NOT NULL AND l.settled_by IS NOT NULL
			  AND c.status IN ('lead', 'conversion') AND c.customer_key = $2`, click, key)
		if leads != 1 || ok != 1 {
			t.Errorf("round %d: %d leads, %d settled with the key saved; want one lead, settled once", r, leads, ok)
		}
		// One settler: a server lead answered 200, or the payment's
		// outcome says it settled the lead; never both.
		settlers := st.count(t, `SELECT count(*) FROM processor_events WHERE event_id = $1 AND outcome LIKE '%provisional lead % settled%'`, ev.ID)
		serverSettled.Range(func(any, any) bool { settlers++; return true })
		if settlers != 1 {
			t.Errorf("round %d: the lead was settled %d times", r, settlers)
		}
		settled += ok
	}
	sc.counts(rounds, settled)
	sc.note("%d rounds of %d server and browser leads and a Stripe payment at once: %s", rounds, callers, answers.String())
}
