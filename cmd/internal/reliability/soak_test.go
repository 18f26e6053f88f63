//go:build soak

package reliability

// The long versions: `go test -tags soak` (make soak).
func init() { soak = true }
