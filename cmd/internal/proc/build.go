package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Build compiles the given main packages of the module in dir (paths
// relative to it, like "./cmd/edge") into binDir with `go build`, and
// returns the path of each binary by its base name.
func Build(dir, binDir string, pkgs ...string) (map[string]string, error) {
	args := append([]string{"build", "-o", binDir + string(filepath.Separator)}, pkgs...)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	bins := make(map[string]string, len(pkgs))
	for _, p := range pkgs {
		name := filepath.Base(p)
		bins[name] = filepath.Join(binDir, name)
	}
	return bins, nil
}

// goTool is the go command of the toolchain that built this program,
// else the one on PATH.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ModuleRoot is the directory of the go.mod above the working directory
// (go test runs a test in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("proc: no go.mod above the working directory")
		}
		dir = parent
	}
}
