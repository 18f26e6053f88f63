package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// spinner animates a waiting line on a terminal; on anything else (a
// pipe, a file, a test buffer) it prints nothing.
type spinner struct {
	w    io.Writer
	msg  string
	quit chan struct{}
	done sync.WaitGroup
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// startSpinner shows msg with a spinner on w until stop, when enabled and
// w is a terminal.
func startSpinner(w io.Writer, msg string, enabled bool) *spinner {
	s := &spinner{w: w, msg: msg, quit: make(chan struct{})}
	if !enabled || !isTerminal(w) {
		return s
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(s.w, "\r%s %s", spinnerFrames[i%len(spinnerFrames)], s.msg)
			select {
			case <-s.quit:
				fmt.Fprint(s.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the animation and clears its line.
func (s *spinner) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	s.done.Wait()
}
