//go:build unix

package fdwait_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/fdwait"
)

// pipe returns a pipe's ends and a Waiter on its read end, with a try that
// reads one byte from the original descriptor, as a C library would.
func pipe(t *testing.T) (r, w *os.File, wt *fdwait.Waiter, try func(uintptr) bool) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	wt, err := fdwait.New(fds[0], "pipe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wt.Close() })
	var b [1]byte
	try = func(uintptr) bool {
		n, err := syscall.Read(fds[0], b[:])
		return n == 1 || err != syscall.EAGAIN
	}
	return r, w, wt, try
}

// bounded runs wait, a Wait whose context cannot end it in time (one
// without a deadline), in another goroutine and returns its error; if it
// has not returned within 10 s, it fails the test, which a regression
// would otherwise hang until -test.timeout. (The Waiter's Close, at the
// test's end, then ends the wait it leaves behind.)
func bounded(t *testing.T, wait func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the Wait has not returned within 10 s")
		return nil
	}
}

func TestWait(t *testing.T) {
	_, w, wt, try := pipe(t)

	// Data already there, and data that comes later.
	w.Write([]byte{1})
	if err := bounded(t, func() error { return wt.Wait(context.Background(), try) }); err != nil {
		t.Fatalf("Wait with a byte there: %v", err)
	}
	time.AfterFunc(20*time.Millisecond, func() { w.Write([]byte{2}) })
	if err := bounded(t, func() error { return wt.Wait(context.Background(), try) }); err != nil {
		t.Fatalf("Wait for a byte: %v", err)
	}

	// Nothing comes: cancellation and a deadline end the wait.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	if err := wt.Wait(ctx, try); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled Wait returned after %v", d)
	}
	// The same, already cancelled, context ends the next wait at once.
	if err := wt.Wait(ctx, try); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context = %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if err := wt.Wait(dctx, try); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past a deadline = %v, want context.DeadlineExceeded", err)
	}

	// The earlier contexts' ends do not cut short a wait without one.
	time.AfterFunc(50*time.Millisecond, func() { w.Write([]byte{3}) })
	if err := bounded(t, func() error { return wt.Wait(context.Background(), try) }); err != nil {
		t.Fatalf("Wait after cancelled contexts: %v", err)
	}

	// Nor does the end of the last cancellable context, whose watch stays
	// in place through a wait without one, when it comes during that wait.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w.Write([]byte{4})
	if err := wt.Wait(ctx, try); err != nil {
		t.Fatalf("Wait with a byte there: %v", err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	time.AfterFunc(100*time.Millisecond, func() { w.Write([]byte{5}) })
	start = time.Now()
	if err := bounded(t, func() error { return wt.Wait(context.Background(), try) }); err != nil {
		t.Fatalf("Wait while an earlier context ends: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Wait while an earlier context ended returned after %v, before its byte came", d)
	}
}

// TestWaitAllocs: a loop that waits with one context, cancellable or not,
// does not allocate after its first wait, nor when waits without a
// context come between.
func TestWaitAllocs(t *testing.T) {
	_, w, wt, try := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one := []byte{1}
	for name, ctxs := range map[string][]context.Context{
		"background":  {context.Background()},
		"cancellable": {ctx},
		// a caller's context, with waits without one between (another
		// goroutine's, as rdmamsg's courier waits)
		"cancellable, then background": {ctx, context.Background()},
	} {
		var failed error
		round := func() {
			for _, ctx := range ctxs {
				w.Write(one)
				if err := wt.Wait(ctx, try); err != nil {
					failed = err
				}
			}
		}
		round()
		if n := testing.AllocsPerRun(50, round); n != 0 {
			t.Errorf("%s: Wait allocates %v times, want 0", name, n)
		}
		if failed != nil {
			t.Fatal(failed)
		}
	}
}

// TestWaitClose: Close ends a wait in progress with ErrClosed.
func TestWaitClose(t *testing.T) {
	_, _, wt, try := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- wt.Wait(ctx, try) }()
	time.Sleep(20 * time.Millisecond)
	if err := wt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, fdwait.ErrClosed) {
			t.Errorf("Wait after Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	if err := wt.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := wt.Wait(context.Background(), try); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Wait on a closed Waiter = %v", err)
	}
}

// Interrupt ends a Wait under way, or the next one when none is, once;
// the Waiter works as before after it; and it allocates nothing.
func TestInterrupt(t *testing.T) {
	_, w, wt, try := pipe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	time.AfterFunc(20*time.Millisecond, wt.Interrupt)
	if err := wt.Wait(ctx, try); !errors.Is(err, fdwait.ErrInterrupted) {
		t.Fatalf("Wait interrupted under way = %v, want ErrInterrupted", err)
	}
	wt.Interrupt()
	if err := wt.Wait(ctx, try); !errors.Is(err, fdwait.ErrInterrupted) {
		t.Fatalf("Wait after an Interrupt = %v, want ErrInterrupted", err)
	}
	// The interruption is spent: a byte ends the next wait, and its
	// context's deadline still bounds one with nothing to read.
	time.AfterFunc(20*time.Millisecond, func() { w.Write([]byte{1}) })
	if err := wt.Wait(ctx, try); err != nil {
		t.Fatalf("Wait for a byte after interruptions: %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := wt.Wait(short, try); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing to read = %v, want context.DeadlineExceeded", err)
	}
	if n := testing.AllocsPerRun(100, wt.Interrupt); n != 0 {
		t.Errorf("Interrupt allocates %v times", n)
	}
}

// TestDeadlineEndsContext: a Wait ended by its context's deadline returns
// only once the context has ended, so that its caller, which looks at
// ctx.Err() to tell the context's end from another failure, sees it. The
// descriptor's deadline is a timer of its own: without the wait for the
// context, most of these Waits returned before ctx.Err() was set.
func TestDeadlineEndsContext(t *testing.T) {
	_, _, wt, try := pipe(t)
	early := 0
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+i%7*100)*time.Microsecond)
		err := wt.Wait(ctx, try)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait with nothing to read: %v, want context.DeadlineExceeded", err)
		}
		if ctx.Err() == nil {
			early++
		}
		cancel()
	}
	if early > 0 {
		t.Errorf("%d of 200 Waits failed with the deadline before their context had ended", early)
	}
}

// deadlineOnly is a Context of a caller's own making with a deadline its
// Done channel does not keep: done never closes (nil: one that cannot
// end).
type deadlineOnly struct {
	context.Context
	d    time.Time
	done chan struct{}
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.d, true }
func (c deadlineOnly) Done() <-chan struct{}       { return c.done }

// TestDeadlineOfOddContext: a Wait whose context has a deadline but no
// Done channel returns DeadlineExceeded at its deadline, not a second
// later, and one whose Done does not close at its deadline ends with
// ErrClosed at the Waiter's Close, while it waits for the context.
func TestDeadlineOfOddContext(t *testing.T) {
	_, _, wt, try := pipe(t)
	ctx := deadlineOnly{Context: context.Background(), d: time.Now().Add(10 * time.Millisecond)}
	start := time.Now()
	if err := bounded(t, func() error { return wt.Wait(ctx, try) }); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("Wait with a deadline and no Done: %v after %v, want context.DeadlineExceeded at once", err, time.Since(start))
	}
	ctx.done = make(chan struct{})
	ctx.d = time.Now().Add(10 * time.Millisecond)
	time.AfterFunc(100*time.Millisecond, func() { wt.Close() })
	start = time.Now()
	if err := bounded(t, func() error { return wt.Wait(ctx, try) }); !errors.Is(err, fdwait.ErrClosed) || time.Since(start) > 700*time.Millisecond {
		t.Errorf("Wait for a context that does not end, closed 100 ms in: %v after %v, want ErrClosed at the Close", err, time.Since(start))
	}
}
