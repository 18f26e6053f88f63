package drive

// Provision creates, through the operator API, the world a load run
// drives: one workspace, programs with an enrolled partner, an active
// referral link, a live API key and (optionally) a processor account, and
// a few seed clicks per program that sales, leads and Stripe events
// attribute to.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Program is one provisioned program.
type Program struct {
	ID, PartnerID, LinkID int64
	Code                  string   // the referral code of its link
	Key                   string   // its live API key
	Account               string   // its processor account (acct_…), when asked for
	Clicks                []string // seed click ids on its link
}

// World is what a run provisioned.
type World struct {
	WorkspaceID, OwnerID int64
	OwnerToken           string // a dashboard token of the workspace owner
	Programs             []Program
}

// ProvisionOptions say what to provision.
type ProvisionOptions struct {
	OperatorToken string
	Tag           string // makes names, codes and accounts unique per run (letters and digits)
	Programs      int
	Accounts      bool // attach a processor account to every program
	SeedClicks    int  // clicks per program recorded through the edge
	Concurrency   int  // parallel provisioning calls (default 8)
}

type envelope[T any] struct {
	Data T `json:"data"`
}

type idData struct {
	ID          int64 `json:"id"`
	OwnerUserID int64 `json:"owner_user_id"`
}

// Provision creates the world.
func Provision(ctx context.Context, c *Client, o ProvisionOptions) (*World, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	op := "/api/operator/v1"
	var ws envelope[idData]
	if err := c.JSON("POST", op+"/workspaces", o.OperatorToken,
		map[string]any{"name": "Load " + o.Tag, "owner_email": "owner-" + o.Tag + "@load.example"}, 201, &ws); err != nil {
		return nil, err
	}
	w := &World{WorkspaceID: ws.Data.ID, OwnerID: ws.Data.OwnerUserID, Programs: make([]Program, o.Programs)}
	var sess envelope[struct {
		Token string `json:"token"`
	}]
	if err := c.JSON("POST", op+"/users/"+itoa(w.OwnerID)+"/sessions", o.OperatorToken, nil, 201, &sess); err != nil {
		return nil, err
	}
	w.OwnerToken = sess.Data.Token
	err := parallel(ctx, o.Programs, o.Concurrency, func(i int) error {
		p, err := program(c, o, w, i)
		w.Programs[i] = p
		return err
	})
	return w, err
}

// program provisions program i of the world.
func program(c *Client, o ProvisionOptions, w *World, i int) (Program, error) {
	op := "/api/operator/v1"
	n := o.Tag + "x" + strconv.Itoa(i)
	var p Program
	var prog envelope[idData]
	if err := c.JSON("POST", op+"/programs", o.OperatorToken, map[string]any{
		"workspace_id": w.WorkspaceID, "name": "Load program " + n, "domain": "shop-" + n + ".example",
		"commission_type": "percent", "commission_rate": 20}, 201, &prog); err != nil {
		return p, err
	}
	p.ID = prog.Data.ID
	pid := itoa(p.ID)
	var partner envelope[idData]
	if err := c.JSON("POST", op+"/programs/"+pid+"/partners", o.OperatorToken,
		map[string]any{"email": "partner-" + n + "@load.example", "name": "Partner " + n}, 201, &partner); err != nil {
		return p, err
	}
	p.PartnerID = partner.Data.ID
	p.Code = "lg" + n
	var link envelope[idData]
	if err := c.JSON("POST", op+"/programs/"+pid+"/links", o.OperatorToken,
		map[string]any{"partner_id": p.PartnerID, "code": p.Code}, 201, &link); err != nil {
		return p, err
	}
	p.LinkID = link.Data.ID
	var key envelope[struct {
		APIKey string `json:"api_key"`
	}]
	if err := c.JSON("POST", "/api/v1/programs/"+pid+"/api-key", w.OwnerToken, nil, 200, &key); err != nil {
		return p, err
	}
	p.Key = key.Data.APIKey
	if o.Accounts {
		p.Account = "acct_" + n
		if err := c.JSON("POST", op+"/programs/"+pid+"/processor-account", o.OperatorToken,
			map[string]any{"account_id": p.Account}, 200, nil); err != nil {
			return p, err
		}
	}
	for k := 0; k < o.SeedClicks; k++ {
		var click struct {
			ClickID string `json:"click_id"`
		}
		body := map[string]any{"affiliate_url": "https://shop-" + n + ".example/landing?aff=" + p.Code}
		if err := c.JSONWith("POST", "/api/v1/track/click", "", seedIP(i, k), body, 200, &click); err != nil {
			return p, err
		}
		if click.ClickID == "" {
			return p, fmt.Errorf("click on %s answered without click_id", p.Code)
		}
		p.Clicks = append(p.Clicks, click.ClickID)
	}
	return p, nil
}

// parallel runs fn(i) for i in [0, n) on at most conc goroutines and
// returns the first error.
func parallel(ctx context.Context, n, conc int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// seedIP is the client address of seed click k of program i, sent in
// X-Forwarded-For so that seeding stays under the per-IP click limit.
func seedIP(i, k int) [][2]string {
	return [][2]string{{"X-Forwarded-For", fmt.Sprintf("172.%d.%d.%d", 16+(i>>16)&15, (i>>8)&255, (i*8+k)&255)}}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// OwnerSessions mints n more dashboard sessions of the world's owner, for
// a phase that must spread its calls over the API's per-token limits.
func OwnerSessions(c *Client, operatorToken string, w *World, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		var sess envelope[struct {
			Token string `json:"token"`
		}]
		if err := c.JSON("POST", "/api/operator/v1/users/"+itoa(w.OwnerID)+"/sessions", operatorToken, nil, 201, &sess); err != nil {
			return nil, err
		}
		out[i] = sess.Data.Token
	}
	return out, nil
}
