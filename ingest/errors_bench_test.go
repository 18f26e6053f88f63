package ingest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/partnertrack/partnertrack/ledger"
)

// BenchmarkErrorEnvelope renders the sale route's 409 (platform envelope
// with error.code and details) through the app's error handler.
func BenchmarkErrorEnvelope(b *testing.B) {
	s := &Server{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	app := fiber.New(fiber.Config{ErrorHandler: s.handleError})
	app.Post("/sale", withStyle(errorStyle{stableCodes: true, internalMessage: "Sale tracking failed"}), func(*fiber.Ctx) error {
		return ledger.NewError(ledger.EDuplicateTransaction, ledger.MsgDuplicateTransaction).WithDetails(map[string]any{"sale_id": int64(42)})
	})
	handler := app.Handler()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI("/sale")
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Init(&req, nil, nil)
			handler(&ctx)
			if code := ctx.Response.StatusCode(); code != fiber.StatusConflict {
				b.Fatalf("status %d: %s", code, ctx.Response.Body())
			}
		}
	})
}
