package stack

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSumsTheCPULine(t *testing.T) {
	got, err := parse(strings.NewReader("cpu  316617 169 73603 217545 5811 0 16176 18239 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{Busy: 316617 + 169 + 73603 + 0 + 16176, Idle: 217545 + 5811, Steal: 18239}
	if got != want {
		t.Fatalf("parse = %+v, want %+v", got, want)
	}
	share := CPUTimes{Busy: 70, Idle: 20, Steal: 10}.StealShare()
	if math.Abs(share-0.10) > 1e-9 {
		t.Fatalf("steal share %v, want 0.10", share)
	}
	if busy := (CPUTimes{Busy: 70, Idle: 20, Steal: 10}).BusyShare(); math.Abs(busy-0.70) > 1e-9 {
		t.Fatalf("busy share %v, want 0.70", busy)
	}
	if _, err := parse(strings.NewReader("intr 1 2 3\n")); err == nil {
		t.Fatal("a file without the cpu line parsed")
	}
}

func TestSamplerCoversASpanOfItsSampling(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := SampleCPU(ctx, 10*time.Millisecond)
	from := time.Now()
	time.Sleep(60 * time.Millisecond)
	spent, ok := s.Between(from, time.Now())
	if !ok {
		t.Fatal("a span inside the sampling is not covered")
	}
	if spent.Busy+spent.Idle+spent.Steal == 0 {
		t.Fatalf("no CPU time passed in 60 ms: %+v", spent)
	}
	if _, ok := s.Between(from.Add(-time.Hour), time.Now()); ok {
		t.Fatal("a span that starts before the first sample is covered")
	}
	total, ok := s.Total()
	if !ok || total.Busy+total.Idle+total.Steal < spent.Busy+spent.Idle+spent.Steal {
		t.Fatalf("total since the first sample %+v (%v), less than a span inside it %+v", total, ok, spent)
	}
}
