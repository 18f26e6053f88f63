package proc

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
)

// Logs is what a process wrote to stdout and stderr, line by line (the
// service logs one JSON object per line), kept in memory and, when asked,
// written to a file as well.
type Logs struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
	file    *os.File
}

// Write stores complete lines; exec calls it from one goroutine.
func (l *Logs) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Write(b)
	}
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) == 0 {
		l.partial = nil // let the backing array go
	}
	return len(b), nil
}

// close keeps an unterminated last line and closes the file.
func (l *Logs) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.lines = append(l.lines, string(l.partial))
		l.partial = nil
	}
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// Lines returns the lines written so far.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines[:len(l.lines):len(l.lines)]
}

// Text returns everything written so far.
func (l *Logs) Text() string {
	lines := l.Lines()
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// Tail returns the last n lines.
func (l *Logs) Tail(n int) string {
	lines := l.Lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Entries returns the lines that are JSON objects, decoded.
func (l *Logs) Entries() []map[string]any {
	var out []map[string]any
	for _, s := range l.Lines() {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Count returns how many JSON lines have msg as their message.
func (l *Logs) Count(msg string) int {
	n := 0
	for _, e := range l.Entries() {
		if e["msg"] == msg {
			n++
		}
	}
	return n
}
