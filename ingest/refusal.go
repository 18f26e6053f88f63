package ingest

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Refusals written before a route's own checks (429 over the rate limit,
// 413 over the body limit) still carry what every response of the route
// carries: the X-RateLimit headers, and the rotation headers when the
// caller's program key is marked for rotation.

// Program keys remembered for refusals.
const (
	rememberKeysFor = 30 * time.Second
	rememberKeysMax = 10_000
)

// keyMemory remembers, by a digest of the token, what program keys the
// edge looked up lately (the key, or nil for a token that is no key), so
// that a refusal can name a key's rotation without a Postgres round trip
// per refused request. Entries live rememberKeysFor; a key marked in the
// meantime shows its headers once its entry expires.
type keyMemory struct {
	mu      sync.Mutex
	entries map[string]rememberedKey
}

type rememberedKey struct {
	key *ledger.ProgramKey // nil: no program key has this token
	at  time.Time
}

func (m *keyMemory) get(digest string, now time.Time) (*ledger.ProgramKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[digest]
	if !ok || now.Sub(e.at) >= rememberKeysFor || now.Before(e.at) {
		return nil, false
	}
	return e.key, true
}

// remember keeps what a lookup found; a full memory starts afresh (a
// flood of made-up tokens must not grow it).
func (m *keyMemory) remember(digest string, key *ledger.ProgramKey, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil || len(m.entries) >= rememberKeysMax {
		m.entries = make(map[string]rememberedKey)
	}
	m.entries[digest] = rememberedKey{key: key, at: now}
}

// refusedKey is the program key of a request about to be refused before
// its route's checks: remembered, else looked up. A client over its limit
// then costs one lookup per token per rememberKeysFor; one that varies
// its token could cost a lookup per request, but so could it, more
// cheaply, on any key route below the limit.
func (s *Server) refusedKey(c *fiber.Ctx) *ledger.ProgramKey {
	tok, st := bearerToken(c.Get(fiber.HeaderAuthorization))
	if st != bearerOK || !strings.HasPrefix(tok, ledger.ProgramKeyPrefix) {
		return nil
	}
	digest, now := tokenBucket(tok), s.now()
	if key, ok := s.keys.get(digest, now); ok {
		return key
	}
	key, err := s.svc.Keys.AuthenticateProgramKey(c.UserContext(), tok)
	switch {
	case ledger.ErrorCode(err) == ledger.ENotFound:
		key = nil
	case err != nil:
		s.logger.Warn("program key lookup for a refusal failed; no rotation headers", "request_id", requestID(c), "err", err)
		return nil
	}
	s.keys.remember(digest, key, now)
	return key
}

// refuse adds the rotation headers of a marked key (retired keys
// included, as their 401 carries them) to a refusal.
func (s *Server) refuse(c *fiber.Ctx, err error) error {
	if key := s.refusedKey(c); key != nil && key.Marked() {
		s.setDeprecationHeaders(c, key)
	}
	return err
}

// errBodyTooLarge is the refusal of a body over limit bytes.
func errBodyTooLarge(limit int) error {
	return ledger.NewError(ledger.EPayloadTooLarge, "Request body too large (limit "+strconv.Itoa(limit)+" bytes)")
}

// limitedRoute registers a route whose rate limiter (in handlers) also
// refuses a body over the limit, after counting the request, so that its
// 413 carries the route's headers; withBodyLimit leaves those routes to it.
func (s *Server) limitedRoute(method, path string, handlers ...fiber.Handler) {
	s.limitedRoutes = append(s.limitedRoutes, limitedPattern{method, strings.Split(strings.TrimSuffix(path, "/"), "/")})
	s.app.Add(method, path, handlers...)
}

// limitedPattern is a route registered with limitedRoute.
type limitedPattern struct {
	method   string
	segments []string
}

// isLimitedRoute reports whether a request matches a route registered with
// limitedRoute, as fiber routes it: HEAD is served by GET routes, a
// :param segment matches any one segment, a trailing slash is ignored.
func (s *Server) isLimitedRoute(method, path string) bool {
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	segs := strings.Split(strings.TrimSuffix(path, "/"), "/")
	for _, r := range s.limitedRoutes {
		if r.method == method && len(r.segments) == len(segs) && segmentsMatch(r.segments, segs) {
			return true
		}
	}
	return false
}

func segmentsMatch(pattern, segs []string) bool {
	for i, want := range pattern {
		if strings.HasPrefix(want, ":") {
			if segs[i] == "" {
				return false
			}
		} else if want != segs[i] {
			return false
		}
	}
	return true
}
