package web

import (
	"bufio"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// pageRoutesFile lists the page routes the reliability scenarios probe
// (isolation and hostile input); they read the same file.
const pageRoutesFile = "testdata/page_routes.txt"

// TestPageRoutesListed checks that testdata/page_routes.txt holds exactly
// the routes Mount registers under /app/ and /partner/: a page route
// missing from the list would be missed by the isolation and hostile
// scenarios, and a listed one that is gone would be probed for nothing.
func TestPageRoutesListed(t *testing.T) {
	app := fiber.New()
	Mount(app, Config{})
	registered := map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		if r.Method == http.MethodHead {
			continue // fiber answers HEAD for every GET
		}
		if strings.HasPrefix(r.Path, "/app/") || strings.HasPrefix(r.Path, "/partner/") {
			registered[r.Method+" "+r.Path] = true
		}
	}
	if len(registered) == 0 {
		t.Fatal("Mount registered no page route under /app/ or /partner/")
	}

	f, err := os.Open(pageRoutesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if listed[line] {
			t.Errorf("%s lists %q twice", pageRoutesFile, line)
		}
		listed[line] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for r := range registered {
		if !listed[r] {
			t.Errorf("page route %s is not in %s: add it there, so that the isolation and hostile scenarios probe it", r, pageRoutesFile)
		}
	}
	for r := range listed {
		if !registered[r] {
			t.Errorf("%s lists %s, which Mount does not register", pageRoutesFile, r)
		}
	}
}
