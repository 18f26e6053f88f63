// Package ceiling is what the bench measures the service against: two
// HTTP ceilings, a bare fiber handler that parses a ~330-byte JSON click
// and answers a small JSON body and the same handler plus one asynq
// enqueue per request, and the raw sale transaction (RawTx). The bench
// runs the HTTP ceilings in a child process (loadgen ceiling-server) so
// that they, like the edge, have a runtime of their own.
package ceiling

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Mode names a ceiling.
type Mode string

const (
	Bare    Mode = "bare"    // parse and answer
	Enqueue Mode = "enqueue" // parse, enqueue one asynq task, answer
)

// Options configure a ceiling server.
type Options struct {
	Mode     Mode
	Listen   string // host:port (port 0 picks one)
	RedisURL string // Enqueue only
	Queue    string // Enqueue only: the asynq queue (namespaced by the caller)
}

// click is the part of the body the handler reads.
type click struct {
	AffiliateURL string `json:"affiliate_url"`
	PageURL      string `json:"page_url"`
	ReferrerURL  string `json:"referrer_url"`
	SessionID    string `json:"session_id"`
}

// Server is a running ceiling server.
type Server struct {
	app *fiber.App
	rdb *redis.Client
	ln  net.Listener
}

// Start listens and serves in the background.
func Start(o Options) (*Server, error) {
	s := &Server{app: fiber.New(fiber.Config{DisableStartupMessage: true,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute})}
	var enq *asynq.Client
	switch o.Mode {
	case Bare:
	case Enqueue:
		opt, err := redis.ParseURL(o.RedisURL)
		if err != nil {
			return nil, err
		}
		s.rdb = redis.NewClient(opt)
		if err := s.rdb.Ping(context.Background()).Err(); err != nil {
			s.rdb.Close()
			return nil, err
		}
		enq = asynq.NewClientFromRedisClient(s.rdb)
	default:
		return nil, errors.New("ceiling: mode must be bare or enqueue")
	}
	var seq atomic.Int64
	s.app.Post("/api/v1/track/click", func(c *fiber.Ctx) error {
		var in click
		if err := json.Unmarshal(c.Body(), &in); err != nil || in.AffiliateURL == "" {
			return c.Status(400).JSON(fiber.Map{"success": false, "error": "affiliate_url is required"})
		}
		id := "clk_" + strconv.FormatInt(seq.Add(1), 36)
		if enq != nil {
			payload, _ := json.Marshal(map[string]string{"click_id": id, "affiliate_url": in.AffiliateURL,
				"page_url": in.PageURL, "referrer_url": in.ReferrerURL, "session_id": in.SessionID, "ip": c.IP()})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := enq.EnqueueContext(ctx, asynq.NewTask("ceiling:click", payload), asynq.Queue(o.Queue), asynq.MaxRetry(0))
			cancel()
			if err != nil {
				return c.Status(500).JSON(fiber.Map{"success": false, "error": "enqueue failed"})
			}
		}
		return c.JSON(fiber.Map{"success": true, "click_id": id, "partner_code": "pat1", "cookie_window_days": 90})
	})
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.ln = ln
	go s.app.Listener(ln)
	return s, nil
}

// Addr is where the server listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error {
	err := s.app.ShutdownWithTimeout(5 * time.Second)
	if s.rdb != nil {
		s.rdb.Close()
	}
	return err
}

// DeleteQueue removes a ceiling queue and its tasks from Redis (the bench
// calls it when the enqueue ceiling is done).
func DeleteQueue(redisURL, queue string) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: opt.Addr, DB: opt.DB, Password: opt.Password, Username: opt.Username})
	defer insp.Close()
	err = insp.DeleteQueue(queue, true)
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	return err
}
