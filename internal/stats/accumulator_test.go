package stats

import (
	"testing"
	"time"
)

func TestAccumulator(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	a := NewAccumulator(t0)

	a.Add(4096*1000, 1000)
	a.Add(4096*24, 24)
	got := a.Snapshot(t0.Add(500 * time.Millisecond))
	// 1024 x 4 KiB in 0.5 s = 8 MiB/s; 2048 msg/s.
	want := Bandwidth{Bytes: 4096, Iterations: 1024, Elapsed: 500 * time.Millisecond, PeakMBps: 8, AvgMBps: 8, MsgRateMpps: 0.002048}
	if got != want {
		t.Errorf("first Snapshot = %+v, want %+v", got, want)
	}

	// Nothing happens in the next second.
	got = a.Snapshot(t0.Add(1500 * time.Millisecond))
	want = Bandwidth{Elapsed: time.Second}
	if got != want {
		t.Errorf("idle Snapshot = %+v, want %+v", got, want)
	}

	a.Add(1<<20, 1)
	a.Add(1<<20, 3)
	got = a.Snapshot(t0.Add(2500 * time.Millisecond))
	// Mean message size (1 MiB + 1 MiB) / 4 = 512 KiB.
	want = Bandwidth{Bytes: 512 << 10, Iterations: 4, Elapsed: time.Second, PeakMBps: 2, AvgMBps: 2, MsgRateMpps: 4e-6}
	if got != want {
		t.Errorf("third Snapshot = %+v, want %+v", got, want)
	}

	if b, m := a.Totals(); b != 4096*1024+2<<20 || m != 1028 {
		t.Errorf("Totals = %d, %d", b, m)
	}

	// A zero-length interval reports zero rates rather than Inf.
	a.Add(10, 1)
	got = a.Snapshot(t0.Add(2500 * time.Millisecond))
	want = Bandwidth{Bytes: 10, Iterations: 1}
	if got != want {
		t.Errorf("zero-length Snapshot = %+v, want %+v", got, want)
	}
}

func TestAccumulatorAddDoesNotAllocate(t *testing.T) {
	a := NewAccumulator(time.Now())
	if n := testing.AllocsPerRun(1000, func() { a.Add(65536, 1) }); n != 0 {
		t.Errorf("Add allocates %v times per call, want 0", n)
	}
}

func TestAccumulatorConcurrentAdd(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := NewAccumulator(t0)
	done := make(chan struct{})
	for range 4 {
		go func() {
			for range 1000 {
				a.Add(8, 1)
			}
			done <- struct{}{}
		}()
	}
	var msgs uint64
	for i := 0; i < 4; {
		select {
		case <-done:
			i++
		default:
			msgs += a.Snapshot(t0).Iterations
		}
	}
	msgs += a.Snapshot(t0).Iterations
	if msgs != 4000 {
		t.Errorf("snapshots saw %d messages, want 4000", msgs)
	}
}
