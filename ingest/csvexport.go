package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/partnertrack/partnertrack/ledger"
)

// exportTimeout bounds the database reads of one CSV export; the server's
// write timeout (10 s) bounds the whole response anyway.
const exportTimeout = 10 * time.Second

// wantsCSV reads a listing's format parameter: json (the default) or csv;
// anything else is a 400 with msg.
func wantsCSV(c *fiber.Ctx, msg string) (bool, error) {
	switch c.Query("format") {
	case "", "json":
		return false, nil
	case "csv":
		return true, nil
	}
	return false, ledger.NewError(ledger.EInvalid, msg)
}

// csvExport is a listing streamed as a CSV attachment: next reads the
// batch after the given row (nil: the first), at most batch rows; a
// shorter batch is the last. next must hold copies of what it reads from
// the request, since later batches are read after the handler returns.
type csvExport[T any] struct {
	what      string // "partner", "commission": the file name and log line
	programID int64
	header    []string
	row       func(*T) []string
	batch     int
	next      func(ctx context.Context, after *T) ([]T, error)
}

// streamCSV answers e as `<what>s-<programID>.csv`, a batch at a time while
// the response is written, so memory stays bounded whatever the program's
// size. The first batch is read before the answer starts, so a failing
// read is still an error answer; a later read that fails (bytes have gone
// out) ends the file early and is logged with the request id.
func streamCSV[T any](s *Server, c *fiber.Ctx, e csvExport[T]) error {
	first, err := e.next(c.UserContext(), nil)
	if err != nil {
		return err
	}
	reqID := requestID(c)
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename=`+e.what+`s-`+strconv.FormatInt(e.programID, 10)+`.csv`)
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
		defer cancel()
		if err := e.write(ctx, bw, first); err != nil && s.logger != nil {
			s.logger.Error(e.what+" CSV export ended early", "program_id", e.programID, "request_id", reqID, "err", err)
		}
	})
	return nil
}

// write writes the header, the batch it was given and every later batch,
// flushing after each so the client receives them as they are read.
func (e csvExport[T]) write(ctx context.Context, bw *bufio.Writer, batch []T) error {
	w := csv.NewWriter(bw)
	if err := w.Write(e.header); err != nil {
		return err
	}
	for {
		for i := range batch {
			if err := w.Write(e.row(&batch[i])); err != nil {
				return err
			}
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if len(batch) < e.batch {
			return nil
		}
		next, err := e.next(ctx, &batch[len(batch)-1])
		if err != nil {
			return err
		}
		batch = next
	}
}
