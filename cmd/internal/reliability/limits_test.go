package reliability

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The edge's own limits (ingest/server.go): bodies of 64 KiB (1 MiB on
// the processor webhooks), headers of 8 KiB, and read, write and idle
// timeouts of 10, 10 and 60 seconds.
const (
	edgeReadTimeout  = 10 * time.Second
	edgeWriteTimeout = 10 * time.Second
	edgeIdleTimeout  = 60 * time.Second
	// margin is how much later than its timeout the edge may act: the
	// machine is shared and loaded.
	margin = 10 * time.Second
)

// TestLimitBodies: a body over the limit answers 413 in the typed
// envelope (code payload_too_large, no data key) on every route, whether
// sent with a length or chunked, and stores nothing. A body over the
// server's own read limit (1 MiB) is answered 413 from its headers alone,
// without being read, and the connection is closed: a client that is
// still sending it may see the connection reset before it reads the
// answer (fasthttp does not linger), so those are sent as headers first.
func TestLimitBodies(t *testing.T) {
	t.Parallel()
	sc := report(t, "limits/bodies-413")
	st := sharedStack(t)
	e := st.startEdge(t, map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_reliability_limits"})
	w := mustWorld(t, e.client, nil)
	pad := func(n int) []byte {
		b := []byte(`{"transaction_id":"big","amount_cents":100,"pad":"`)
		b = append(b, bytes.Repeat([]byte("x"), n-len(b)-2)...)
		return append(b, `"}`...)
	}
	routes := []struct {
		path, token string
		limit       int
	}{
		{"/api/v1/track/sale", w.LiveKey, 64 << 10},
		{"/api/v1/track/refund", w.LiveKey, 64 << 10},
		{"/api/v1/track/lead", "", 64 << 10},
		{"/api/v1/track/click", "", 64 << 10},
		{"/api/v1/track/visit", "", 64 << 10},
		{"/api/v1/cli/test-event", w.LiveKey, 64 << 10},
		{"/api/v1/cli/auth/callback", "", 64 << 10},
		{"/api/operator/v1/workspaces", opToken, 64 << 10},
		{"/api/v1/webhooks/stripe", "", 1 << 20},
		{"/webhooks/stripe/" + itoa(w.ProgramID), "", 1 << 20},
	}
	refused := 0
	before := st.count(t, `SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM leads) + (SELECT count(*) FROM workspaces) + (SELECT count(*) FROM processor_events)`)
	for _, r := range routes {
		for _, tc := range []struct {
			desc    string
			size    int
			chunked bool
		}{
			{"one byte over", r.limit + 1, false},
			{"one byte over, chunked", r.limit + 1, true},
		} {
			if r.limit+1 > 1<<20 {
				// Over the server's limit: see bigBody.
				status, raw := bigBody(t, e.Addr, r.path, r.token, tc.size, tc.chunked)
				if status != 413 || !bytes.Contains(raw, []byte(`"code":"payload_too_large"`)) || bytes.Contains(raw, []byte(`"data"`)) {
					t.Errorf("%s %s: %d %s", r.path, tc.desc, status, raw)
					continue
				}
				refused++
				continue
			}
			var body io.Reader = bytes.NewReader(pad(tc.size))
			if tc.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			hr, _ := http.NewRequest("POST", e.base+r.path, body)
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("X-Forwarded-For", nextIP())
			if r.token != "" {
				hr.Header.Set("Authorization", "Bearer "+r.token)
			}
			resp, err := e.http.Do(hr)
			if err != nil {
				// The edge may close the connection after answering a body
				// it will not read; the answer must still have come.
				t.Errorf("%s %s: %v", r.path, tc.desc, err)
				continue
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || !bytes.Contains(raw, []byte(`"code":"payload_too_large"`)) || bytes.Contains(raw, []byte(`"data"`)) {
				t.Errorf("%s %s: %d %s", r.path, tc.desc, resp.StatusCode, raw)
				continue
			}
			refused++
		}
		// Far over the server's read limit: answered from the headers.
		if status, raw := bigBody(t, e.Addr, r.path, r.token, 4<<20, false); status != 413 || !bytes.Contains(raw, []byte(`"code":"payload_too_large"`)) {
			t.Errorf("%s 4 MiB: %d %s", r.path, status, raw)
		} else {
			refused++
		}
		// At the limit the body is read (and refused for what it says).
		rep, err := e.call(req{method: "POST", path: r.path, token: r.token, body: pad(r.limit), header: map[string]string{"X-Forwarded-For": nextIP()}})
		if err != nil || rep.Status == 413 || rep.Status >= 500 {
			t.Errorf("%s at the limit: %v %v", r.path, rep, err)
		}
	}
	after := st.count(t, `SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM leads) + (SELECT count(*) FROM workspaces) + (SELECT count(*) FROM processor_events)`)
	sc.counts(0, after-before)
	sc.note("%d oversized bodies refused with 413 payload_too_large on %d routes", refused, len(routes))
	if after != before {
		t.Errorf("oversized bodies stored %d rows", after-before)
	}
}

// bigBody sends a request whose body is over the server's read limit over
// a raw connection: with Content-Length, the headers only (the edge
// answers from them); chunked, just over 1 MiB of chunks and no more (the
// edge reads them all, then answers). It returns the answer's status and
// body.
func bigBody(t *testing.T, addr, path, token string, size int, chunked bool) (int, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(edgeReadTimeout + margin))
	head := "POST " + path + " HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\n"
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	go func() {
		if !chunked {
			fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n", head, size)
			return
		}
		fmt.Fprintf(conn, "%sTransfer-Encoding: chunked\r\n\r\n", head)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for sent := 0; sent <= 1<<20; sent += len(chunk) {
			fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Errorf("%s body of %d bytes: no answer: %v", path, size, err)
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// TestLimitHeaders: request headers over 8 KiB, in one header or in many,
// are answered 431 (or the connection is closed), never left hanging; the
// edge serves the next client as usual.
func TestLimitHeaders(t *testing.T) {
	t.Parallel()
	sc := report(t, "limits/headers-431")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	for _, tc := range []struct {
		desc    string
		headers string
	}{
		{"one 9 KiB header", "X-Pad: " + strings.Repeat("a", 9<<10) + "\r\n"},
		{"one 100 KiB header", "X-Pad: " + strings.Repeat("a", 100<<10) + "\r\n"},
		{"a 10,000-character token", "Authorization: Bearer aff_" + strings.Repeat("k", 10_000) + "\r\n"},
		{"2,000 small headers", strings.Repeat("X-A: b\r\n", 2000)},
		{"a 10 KiB request line", ""},
	} {
		conn, err := net.DialTimeout("tcp", e.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(edgeReadTimeout + margin))
		line := "GET /healthz HTTP/1.1\r\n"
		if tc.headers == "" {
			line = "GET /healthz?x=" + strings.Repeat("q", 10<<10) + " HTTP/1.1\r\n"
		}
		// The edge may close while the headers are still being written.
		go fmt.Fprintf(conn, "%sHost: edge\r\n%s\r\n", line, tc.headers)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case err == nil && resp.StatusCode == 431:
		case err != nil && !isTimeout(err):
			// closed without an answer: refused cleanly
		case err != nil:
			t.Errorf("%s: no answer and no close within %s", tc.desc, edgeReadTimeout+margin)
		default:
			t.Errorf("%s: %d", tc.desc, resp.StatusCode)
		}
		conn.Close()
	}
	e.must(t, 200, req{method: "GET", path: "/healthz"})
	sc.note("5 oversized requests answered 431 or closed; the edge went on serving")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestSlowClients: slowloris clients (headers, or a body, a byte every
// 500 ms) are cut off within the edge's read timeout, a client that reads
// none of a stream of pipelined answers is cut off within its write
// timeout, and an idle keep-alive connection is closed within its idle
// timeout; the edge serves other clients all the while.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	sc := report(t, "limits/slow-clients-cut-off")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	w := mustWorld(t, e.client, nil)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var order []string
	longest := map[string]time.Duration{}
	count := map[string]int{}
	check := func(desc string, limit time.Duration, fn func() (time.Duration, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			took, err := fn()
			switch {
			case err != nil:
				t.Errorf("%s: %v", desc, err)
			case took > limit+margin:
				t.Errorf("%s: cut off after %s, the limit is %s", desc, took.Round(time.Millisecond), limit)
			default:
				mu.Lock()
				if count[desc] == 0 {
					order = append(order, desc)
				}
				count[desc]++
				longest[desc] = max(longest[desc], took)
				mu.Unlock()
			}
		}()
	}
	defer func() {
		for _, d := range order {
			sc.note("%d× %s: cut off within %s", count[d], d, longest[d].Round(100*time.Millisecond))
		}
	}()
	// trickle writes prefix, then one byte of rest every 500 ms until the
	// edge closes the connection, and says when it did.
	trickle := func(prefix, rest string) (time.Duration, error) {
		conn, err := net.DialTimeout("tcp", e.Addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		start := time.Now()
		closed := make(chan struct{})
		go func() { io.Copy(io.Discard, conn); close(closed) }()
		if _, err := io.WriteString(conn, prefix); err != nil {
			return 0, err
		}
		for i := 0; i < len(rest); i++ {
			select {
			case <-closed:
				return time.Since(start), nil
			case <-time.After(500 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{rest[i]}); err != nil {
				return time.Since(start), nil
			}
		}
		return 0, fmt.Errorf("still connected after %s of trickling", time.Since(start).Round(time.Second))
	}
	for i := 0; i < scale(3, 50); i++ {
		check("a slowloris client trickling its headers", edgeReadTimeout, func() (time.Duration, error) {
			return trickle("GET /healthz HTTP/1.1\r\n", "X-Slow: "+strings.Repeat("s", 200))
		})
		check("a client trickling its body", edgeReadTimeout, func() (time.Duration, error) {
			return trickle("POST /api/v1/track/sale HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer "+w.LiveKey+
				"\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n", strings.Repeat(" ", 300))
		})
	}
	check("a client that reads none of its pipelined answers", edgeWriteTimeout, func() (time.Duration, error) {
		conn, err := net.DialTimeout("tcp", e.Addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(4096)
		const n = 4000 // × 11 KiB of tracker.js: far more than the socket buffers hold
		reqs := strings.Repeat("GET /tracker.js HTTP/1.1\r\nHost: edge\r\n\r\n", n)
		conn.SetWriteDeadline(time.Now().Add(edgeWriteTimeout + margin))
		go io.WriteString(conn, reqs)
		start := time.Now()
		time.Sleep(edgeWriteTimeout + 2*time.Second)
		// Now read what the edge sent before it gave up on the client.
		conn.SetReadDeadline(time.Now().Add(margin))
		br := bufio.NewReader(conn)
		answered := 0
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				if isTimeout(err) {
					return 0, fmt.Errorf("the edge kept the connection open after %d of %d answers", answered, n)
				}
				break
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answered++
		}
		if answered >= n {
			return 0, fmt.Errorf("every answer was delivered: the write timeout was not reached")
		}
		return time.Since(start), nil
	})
	check("an idle keep-alive connection", edgeIdleTimeout, func() (time.Duration, error) {
		conn, err := net.DialTimeout("tcp", e.Addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		conn.SetReadDeadline(time.Now().Add(edgeIdleTimeout + margin))
		if _, err := br.ReadByte(); err == nil || isTimeout(err) {
			return 0, fmt.Errorf("the idle connection is still open after %s", time.Since(start).Round(time.Second))
		}
		return time.Since(start), nil
	})
	// Meanwhile the edge answers everyone else.
	for i := 0; i < 20; i++ {
		e.must(t, 200, req{method: "GET", path: "/healthz"})
		time.Sleep(250 * time.Millisecond)
	}
	wg.Wait()
}

// TestLimitRateFloodFromManyIPs: a burst of clicks from thousands of
// client addresses, with a few clients hammering at the same time. Each
// hammering client gets exactly its 60 clicks a minute and 429 typed
// (rate_limited) for the rest, whatever the flood; every flooding client
// gets its click; every click answered 200 is stored, and none refused.
// (The limiter's memory bound and its eviction under a flood bigger than
// it holds are proven in process: ratelimit TestMemoryLimitHoldsUnderFlood
// and ingest TestRateLimitHoldsUnderAFloodOfIPs.)
func TestLimitRateFloodFromManyIPs(t *testing.T) {
	t.Parallel()
	sc := report(t, "limits/rate-limit-flood-many-ips")
	st := sharedStack(t)
	e := st.startEdge(t, nil)
	w := mustWorld(t, e.client, nil)
	st.startWorker(t, []string{"--queues", "clicks", "--scheduler=false", "--concurrency", "2"}, nil)
	flood := scale(2000, 20000)
	heavy := []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}
	const perHeavy = 90
	var mu sync.Mutex
	var accepted []string
	var answers tally
	heavyCalls := map[string][]windowed{}
	click := func(ip string) {
		sent := time.Now()
		rep, err := e.call(req{method: "POST", path: "/api/v1/track/click", body: w.clickBody(), header: map[string]string{"X-Forwarded-For": ip}})
		if err != nil {
			answers.add(0)
			return
		}
		answers.add(rep.Status)
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(ip, "198.51.100.") {
			heavyCalls[ip] = append(heavyCalls[ip], windowed{sent, time.Now(), rep.Status == 200})
		}
		switch {
		case rep.Status == 200:
			accepted = append(accepted, rep.Body["click_id"].(string))
		case rep.Status == 429 && strings.HasPrefix(ip, "198.51.100.") && rep.errObj()["code"] == "rate_limited":
		default:
			t.Errorf("click from %s: %s", ip, rep)
		}
	}
	// The hammering clients should fit in one limiter window (a minute
	// of the clock); they take a few seconds.
	startEarlyInMinute()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run(10, flood, func(i int) { click(ipOf(1_000_000 + i)) })
	}()
	for _, ip := range heavy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perHeavy; i++ {
				click(ip)
			}
		}()
	}
	wg.Wait()
	for _, ip := range heavy {
		if err := checkMinuteLimit(heavyCalls[ip], 60); err != nil {
			t.Errorf("%s: %v", ip, err)
		}
	}
	st.waitCount(t, len(accepted), 2*time.Minute, `SELECT count(*) FROM clicks`)
	stored := st.count(t, `SELECT count(*) FROM clicks`)
	sc.counts(len(accepted), stored)
	sc.note("%d clicks from distinct addresses and %d from each of %d hammering ones: %s", answers.get(200)-60*len(heavy), perHeavy, len(heavy), answers.String())
	if stored != len(accepted) {
		t.Errorf("%d stored, %d accepted", stored, len(accepted))
	}
}

// windowed is one call of a client under a per-minute limit: when it was
// sent, when its answer came, and whether it was accepted.
type windowed struct {
	sent, answered time.Time
	ok             bool
}

// checkMinuteLimit checks one client's calls against a limit of limit
// calls per clock minute (the limiter's window). The hammering usually
// fits in one minute, but on a loaded machine it may cross into the
// next: a call sent and answered within one minute counts in that
// minute; a call that spans the boundary could be counted in either, so
// it loosens only the lower bound. In each minute at most limit calls are
// accepted, and at least the first limit calls of the minute are.
func checkMinuteLimit(calls []windowed, limit int) error {
	sent, ok := map[time.Time]int{}, map[time.Time]int{}
	spanning := 0
	for _, c := range calls {
		m := c.sent.Truncate(time.Minute)
		if !c.answered.Truncate(time.Minute).Equal(m) {
			spanning++
			continue
		}
		sent[m]++
		if c.ok {
			ok[m]++
		}
	}
	for m, n := range sent {
		if ok[m] > limit {
			return fmt.Errorf("%d of %d calls accepted in the minute of %s, the limit is %d a minute", ok[m], n, m.Format("15:04"), limit)
		}
		if ok[m] < min(n, limit)-spanning {
			return fmt.Errorf("%d of %d calls accepted in the minute of %s, want %d (the limit, %d a minute)", ok[m], n, m.Format("15:04"), min(n, limit), limit)
		}
	}
	if len(calls) == 0 {
		return errors.New("no call answered")
	}
	return nil
}

// startEarlyInMinute returns when at least 15 s of the clock's minute
// (the limiter's window) remain: at once, or at the next minute's start.
func startEarlyInMinute() {
	if now := time.Now(); now.Second() > 45 {
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute + time.Second).Sub(now))
	}
}

// busiestMinute is the most calls sent and answered within one clock
// minute.
func busiestMinute(calls []windowed) int {
	per := map[time.Time]int{}
	most := 0
	for _, c := range calls {
		m := c.sent.Truncate(time.Minute)
		if c.answered.Truncate(time.Minute).Equal(m) {
			per[m]++
			most = max(most, per[m])
		}
	}
	return most
}

// TestCheckMinuteLimit: the per-minute check refuses too many accepted
// calls in a minute and too few, and allows a run that crosses a minute.
func TestCheckMinuteLimit(t *testing.T) {
	at := time.Date(2026, 11, 27, 4, 0, 50, 0, time.UTC)
	calls := func(from time.Time, n, accepted int) []windowed {
		var out []windowed
		for i := 0; i < n; i++ {
			s := from.Add(time.Duration(i) * 100 * time.Millisecond)
			out = append(out, windowed{s, s.Add(50 * time.Millisecond), i < accepted})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		calls []windowed
		ok    bool
	}{
		{"one minute, 60 of 90", calls(at, 90, 60), true},
		{"one minute, 61 of 90", calls(at, 90, 61), false},
		{"one minute, 59 of 90", calls(at, 90, 59), false},
		{"crossing: 60 then 60 of 80", append(calls(at, 60, 60), calls(at.Add(10*time.Second), 80, 60)...), true},
		{"crossing: 70 in the second minute", append(calls(at, 60, 60), calls(at.Add(10*time.Second), 80, 70)...), false},
		{"nothing", nil, false},
	} {
		if err := checkMinuteLimit(c.calls, 60); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
