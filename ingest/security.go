package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// Security headers: nosniff on every response, and on the asynq dashboard
// a Content-Security-Policy, no framing, and no cross-site changes.

const headerNoSniff = "X-Content-Type-Options"

// withNoSniff tells browsers to trust the Content-Type of every response
// (a JSON error must never be sniffed into HTML or script). handleError
// sets it too, for refusals written before any middleware ran.
func withNoSniff(c *fiber.Ctx) error {
	c.Set(headerNoSniff, "nosniff")
	return c.Next()
}

// msgOpsCrossSite refuses a change to the dashboard that a browser sent
// from another site (it would carry the operator's cached basic auth).
const msgOpsCrossSite = "Cross-site changes to the queue dashboard are refused"

// opsCrossOrigin judges Sec-Fetch-Site, else Origin against Host, as the
// standard library's CSRF protection does.
var opsCrossOrigin = http.NewCrossOriginProtection()

// isQueuesPath reports whether p is the dashboard or below it (fiber's Use
// prefix also matches /ops/queuesx).
func isQueuesPath(p string) bool {
	return p == queuesPath || strings.HasPrefix(p, queuesPath+"/")
}

// opsSecurityHeaders sets the dashboard's headers on every answer under
// /ops/queues, its 401 and 403 included: the policy allows only its own
// scripts (the two inline ones by hash), its styles and Google's fonts,
// which the page loads, and no framing.
func (s *Server) opsSecurityHeaders(c *fiber.Ctx) error {
	if isQueuesPath(c.Path()) {
		c.Set("Content-Security-Policy", s.opsCSP)
		c.Set(fiber.HeaderXFrameOptions, "DENY")
	}
	return c.Next()
}

// opsSameOrigin refuses every state-changing request to the dashboard that
// a browser marks as cross-site (Sec-Fetch-Site), or, from a browser too
// old to send that, whose Origin is not the dashboard's host. Requests
// without either header (curl, scripts) are not a browser's and pass.
func (s *Server) opsSameOrigin(c *fiber.Ctx) error {
	r := &http.Request{
		Method: c.Method(),
		Host:   string(c.Request().Host()),
		URL:    &url.URL{Path: c.Path()},
		Header: http.Header{},
	}
	for _, h := range []string{"Sec-Fetch-Site", fiber.HeaderOrigin} {
		if v := c.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	if err := opsCrossOrigin.Check(r); err != nil {
		return ledger.NewError(ledger.EForbidden, msgOpsCrossSite)
	}
	return c.Next()
}

// inlineScript finds the scripts of a page; those with a src are not
// inline.
var inlineScript = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

// queuesCSP is the dashboard's policy. The page's inline scripts depend on
// the dashboard's options (root path, read-only), so their hashes come
// from the page as this handler renders it.
func queuesCSP(h http.Handler) string {
	rec := &pageRecorder{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(rec, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: queuesPath + "/"}, Header: http.Header{}})
	scripts := []string{"'self'"}
	if rec.status == http.StatusOK {
		for _, m := range inlineScript.FindAllSubmatch(rec.body.Bytes(), -1) {
			if bytes.Contains(m[1], []byte("src=")) {
				continue
			}
			sum := sha256.Sum256(m[2])
			scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		}
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src " + strings.Join(scripts, " "),
		"style-src 'self' 'unsafe-inline' https://fonts.googleapis.com", // the UI library injects <style> elements
		"font-src 'self' https://fonts.gstatic.com",
		"img-src 'self' data:",
		"connect-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; ")
}

// pageRecorder keeps what a handler writes (the dashboard's page, once).
type pageRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *pageRecorder) Header() http.Header         { return r.header }
func (r *pageRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *pageRecorder) WriteHeader(status int)      { r.status = status }
