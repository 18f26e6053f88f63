package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Limits of the spec's Limits table, per minute.
const (
	limitClick      = 60
	limitVisit      = 120
	limitConfig     = 60
	limitLead       = 30
	limitSaleRefund = 120
	limitReadiness  = 30
	limitSources    = 30
	limitSettings   = 30
	limitCLI        = 60
)

// limitKey names the caller a bucket counts.
type limitKey int

const (
	byIP    limitKey = iota // the client IP
	byToken                 // the bearer token, else the client IP
)

// tokenBucket names a token's bucket by a digest of the token, never the
// token itself: the Redis store writes bucket names into Redis, and a
// flood of long made-up tokens must not fill the memory store with them.
func tokenBucket(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "k:" + hex.EncodeToString(sum[:16])
}

// rateLimit counts the request in bucket and refuses it with 429 before
// the handler runs once the limit is reached, then refuses a body over
// the limit with 413 (see limitedRoute). Every response of the route
// carries the X-RateLimit headers, and a refusal here the rotation headers
// of a marked program key (refusal.go).
func (s *Server) rateLimit(bucket string, limit int, key limitKey) fiber.Handler {
	limitHeader := strconv.Itoa(limit)
	return func(c *fiber.Ctx) error {
		caller := ""
		if key == byToken {
			if tok, st := bearerToken(c.Get(fiber.HeaderAuthorization)); st == bearerOK {
				caller = tokenBucket(tok)
			}
		}
		if caller == "" {
			caller = "ip:" + s.clientIP(c)
		}
		res, err := s.limiter.Allow(c.UserContext(), bucket+"|"+caller, limit)
		if err != nil {
			s.logger.Warn("rate limiter unavailable; request allowed", "request_id", requestID(c), "err", err)
		}
		c.Set("X-RateLimit-Limit", limitHeader)
		c.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		c.Set("X-RateLimit-Reset", strconv.FormatInt(res.Reset.Unix(), 10))
		if !res.Allowed {
			retry := res.RetryAfterSeconds(s.limiter.Now())
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retry))
			return s.refuse(c, &ledger.Error{
				Code:    ledger.ERateLimited,
				Message: "Too many requests. Retry after " + strconv.Itoa(retry) + " seconds.",
				Details: map[string]any{"retry_after_seconds": retry},
			})
		}
		if len(c.Body()) > maxBodyBytes {
			return s.refuse(c, errBodyTooLarge(maxBodyBytes))
		}
		return c.Next()
	}
}
