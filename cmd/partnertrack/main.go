// Command partnertrack is the brands' command-line tool: login, init,
// programs, status, readiness and test-event against a partnertrack edge
// (see package cli for the commands and exit codes).
package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/partnertrack/partnertrack/cmd/partnertrack/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Getenv:      os.Getenv,
		ConfigDir:   os.UserConfigDir,
		OpenBrowser: openBrowser,
	})
	stop()
	os.Exit(code)
}

// openBrowser opens url with the system's browser opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start()
}
