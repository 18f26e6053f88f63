package proc

import "testing"

func TestWithDB(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable": "postgres://postgres@127.0.0.1:5432/bench1?sslmode=disable",
		"postgres://u:p@db:5432/x":                                    "postgres://u:p@db:5432/bench1",
	} {
		if got := WithDB(in, "bench1"); got != want {
			t.Errorf("WithDB(%s) = %s, want %s", in, got, want)
		}
	}
}
