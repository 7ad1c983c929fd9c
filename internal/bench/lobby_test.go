//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// held is a server (serve, not once) whose first test is held in its
// Admit until release is closed; taken gets each test's size as Admit
// sees it.
func held(t *testing.T) (s *serving, taken chan uint32, release chan struct{}) {
	return heldLocal(t, Local{})
}

// heldLocal is held with the server's side l (its IdleTimeout, say),
// whose Admit it sets.
func heldLocal(t *testing.T, l Local) (s *serving, taken chan uint32, release chan struct{}) {
	taken, release = make(chan uint32, 128), make(chan struct{})
	var first sync.Once
	l.Admit = func(spec exchange.TestSpec) error {
		taken <- spec.Size
		first.Do(func() { <-release })
		return nil
	}
	s = newServingLocal(t, false, l)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return s, taken, release
}

// start has a client ask for a test of size and waits until the server
// takes it.
func (s *serving) start(taken chan uint32, size uint32) *exchange.Conn {
	s.t.Helper()
	return s.startOn(s.greet(), taken, size)
}

// greet connects as a client and says hello.
func (s *serving) greet() *exchange.Conn {
	s.t.Helper()
	c, err := s.hello(5 * time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// startOn has the client on c ask for a test of size and waits until the
// server takes it.
func (s *serving) startOn(c *exchange.Conn, taken chan uint32, size uint32) *exchange.Conn {
	s.t.Helper()
	sp := s.spec
	sp.Size = size
	if err := c.Send(s.ctx, sp); err != nil {
		s.t.Fatal(err)
	}
	select {
	case got := <-taken:
		if got != size {
			s.t.Fatalf("took test %d; want %d", got, size)
		}
	case <-time.After(2 * time.Second):
		s.t.Fatalf("test %d not taken within 2 s", size)
	}
	return c
}

// TestServeGreetsDuringTest: a client that connects while another's test
// runs is greeted at once, waits its turn, sent Alives, and its test
// runs after. (No device: it is then told it cannot open one.) It waited
// in the listener's backlog, and its 10 s for the server's hello ran out
// there.
func TestServeGreetsDuringTest(t *testing.T) {
	s, taken, release := held(t)
	s.start(taken, 1)
	c, err := s.hello(2 * time.Second)
	if err != nil {
		t.Fatalf("a client that came during a test: %v; want greeted", err)
	}
	sp := s.spec
	sp.Size = 2
	if err := c.Send(s.ctx, sp); err != nil {
		t.Fatal(err)
	}
	s.sentQueued(c, "a client waiting its turn")
	close(release)
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	if _, err := c.Recv(ctx); err == nil || !strings.Contains(err.Error(), "device") {
		t.Errorf("the client that came during a test: %v; want its test run, told the device is not there", err)
	}
}

// inLine waits until the client on c, which asked for a test behind
// another's, has its place in the lobby: until told, which reads what
// c's OnQueued kept, says a Queued came. The server greets clients in
// parallel and lines them up as their greetings end, so a test that
// wants them in the order they asked waits for each.
func (s *serving) inLine(c *exchange.Conn, told func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !told() && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
		_, err := c.Recv(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			s.t.Fatalf("a client waiting its turn: %v; want nothing but Queued", err)
		}
	}
	if !told() {
		s.t.Fatal("a client that asked for a test behind another's: no Queued within 2 s")
	}
}

// sentQueued waits on c, whose client waits its turn, until the server
// has sent it 3 Queued, and fails where that takes over 3 s, where one
// comes more than a second after the one before, or where anything else
// comes: the lobby sends a client waiting a Queued every alive period
// (250 ms), so that its peer timeout does not fire. It counts what comes
// rather than asking how long ago the last came, which a stall of the
// whole process (a loaded CI machine) would push past any short bound;
// the server sends nothing while it is stopped either. who says whose
// wait it is. It replaces c's OnQueued, and leaves none.
func (s *serving) sentQueued(c *exchange.Conn, who string) {
	s.t.Helper()
	const want, within, maxGap = 3, 3 * time.Second, time.Second
	ctx, cancel := context.WithTimeout(s.ctx, within)
	defer cancel()
	var came []time.Time
	c.OnQueued(func(exchange.Queued) {
		// Recv skips each Queued, and returns only once ctx ends.
		if came = append(came, time.Now()); len(came) == want {
			cancel()
		}
	})
	defer c.OnQueued(nil)
	m, err := c.Recv(ctx)
	switch {
	case err == nil:
		s.t.Fatalf("%s: got a %v; want nothing but Queued", who, m.Type())
	case !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		s.t.Fatalf("%s: %v; want nothing but Queued", who, err)
	case len(came) < want:
		s.t.Fatalf("%s: %d Queued from the server in %v; want %d, one every alive period", who, len(came), within, want)
	}
	for i := 1; i < len(came); i++ {
		if gap := came[i].Sub(came[i-1]); gap > maxGap {
			s.t.Errorf("%s: a Queued came %v after the one before; want one every alive period", who, gap)
		}
	}
}

// TestServeTellsQueuedClients: clients that wait their turns are told
// how many tests come before theirs, the one running included, and told
// again as the line moves; a test of several threads counts once. It
// mostly waits, and sets none of the package's knobs: it runs beside
// TestServeDropsSilentClients and TestSlowRateLateDatagrams (t.Parallel).
func TestServeTellsQueuedClients(t *testing.T) {
	t.Parallel()
	s, taken, _ := held(t)
	s.start(taken, 1)
	ask := func(spec exchange.TestSpec) (*exchange.Conn, *[]uint32) {
		c := s.greet()
		var got []uint32
		c.OnQueued(func(q exchange.Queued) { got = append(got, q.Ahead) })
		if err := c.Send(s.ctx, spec); err != nil {
			t.Fatal(err)
		}
		s.inLine(c, func() bool { return len(got) > 0 })
		return c, &got
	}
	sp := s.spec
	sp.Size = 2
	b, bGot := ask(sp)
	var threads []*exchange.Conn
	var threadsGot []*[]uint32
	for i := range 2 {
		tsp := s.spec
		tsp.Size, tsp.Threads, tsp.Thread, tsp.Group, tsp.NumQPs = 3, 2, uint16(i), 77, 2
		c, got := ask(tsp)
		threads, threadsGot = append(threads, c), append(threadsGot, got)
	}
	sp.Size = 4
	d, dGot := ask(sp)
	// Nothing but Queued comes while the first test is held.
	time.Sleep(600 * time.Millisecond)
	for _, c := range append([]*exchange.Conn{b, d}, threads...) {
		ctx, cancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
		_, err := c.Recv(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a client waiting its turn: %v; want nothing but Queued", err)
		}
	}
	last := func(got *[]uint32) int {
		if len(*got) == 0 {
			return -1
		}
		return int((*got)[len(*got)-1])
	}
	if last(bGot) != 1 || last(dGot) != 3 {
		t.Errorf("tests ahead: the second client was told %v, the fourth %v; want 1 and 3 last", *bGot, *dGot)
	}
	for i, got := range threadsGot {
		if last(got) != 2 {
			t.Errorf("thread %d of the third test: told %v; want 2 ahead", i, *got)
		}
	}
	// The second client goes: the fourth moves up.
	b.Close()
	*dGot = nil
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
	d.OnQueued(func(q exchange.Queued) {
		// Recv skips each Queued: end it once the line has moved.
		if *dGot = append(*dGot, q.Ahead); q.Ahead == 2 {
			cancel()
		}
	})
	m, err := d.Recv(ctx)
	cancel()
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the fourth client, once the second went: %v, %v; want nothing but Queued", m, err)
	}
	if last(dGot) != 2 {
		t.Errorf("the fourth client, once the second went: told %v; want 2 ahead", *dGot)
	}
}

// TestServeDropsGoneClients: a client that goes away while it waits is
// dropped and reported, its test never taken (Admit never sees it, the
// device is not opened); a test of several threads whose first thread
// went away does not hold up the client behind it for the gathering's
// wait. They were taken at their turn, and the threads' first held the
// next client groupWait.
func TestServeDropsGoneClients(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = 10 * time.Second
	s, taken, release := held(t)
	// Greeted before the first test is taken, which the server queued
	// before the lobby too.
	first, gone, thread, next := s.greet(), s.greet(), s.greet(), s.greet()
	s.startOn(first, taken, 1)
	// queue has the client on c ask for sp and waits until it is in line,
	// behind those before it.
	queue := func(c *exchange.Conn, sp exchange.TestSpec) {
		t.Helper()
		var told atomic.Bool
		c.OnQueued(func(exchange.Queued) { told.Store(true) })
		if err := c.Send(s.ctx, sp); err != nil {
			t.Fatal(err)
		}
		s.inLine(c, told.Load)
	}
	sp := s.spec
	sp.Size = 2
	queue(gone, sp)
	sp.Size, sp.Threads, sp.Group = 3, 2, 9
	queue(thread, sp) // thread 0 of 2; thread 1 never comes
	sp = s.spec
	sp.Size = 4
	queue(next, sp)
	gone.Close()
	thread.Close()
	time.Sleep(time.Second)
	close(release)
	began := time.Now()
	select {
	case got := <-taken:
		if got != 4 {
			t.Errorf("took test %d; want 4, those before it gone", got)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("the client behind gone ones was taken after %v, with a groupWait of %v", took, groupWait)
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("the client behind gone ones was not taken within 8 s, with a groupWait of %v", groupWait)
	}
	// The server reports them through done as it takes them from its
	// lobby, which may be after the next test.
	left := 0
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = 0
		for _, r := range s.reports() {
			if KeepsWaiting(r) && strings.Contains(r.Error(), "went away while it waited its turn") {
				left++
			}
		}
		if left >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if left != 2 {
		t.Errorf("done got %v; want the two clients gone reported", s.reports())
	}
}

// TestServeLobbyBounded: past maxWaiting clients waiting, the next one
// is told at once that the server is busy; those waiting cost the server
// no goroutine each. The clients were all queued, each with a goroutine
// of its own sending it Alives.
func TestServeLobbyBounded(t *testing.T) {
	restoreAtEnd(t, &maxWaiting)
	maxWaiting = 8
	s, taken, _ := held(t)
	// The lobby runs, its goroutines started, once a connection that
	// asked for no test is reported: one that says hello and goes.
	s.greet().Close()
	for deadline := time.Now().Add(2 * time.Second); len(s.reports()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a connection that said hello and went: not reported within 2 s")
		}
	}
	before := runtime.NumGoroutine()
	// Greeted before the first test is taken, which the server queued
	// before the lobby too.
	all := make([]*exchange.Conn, 20) // fewer than maxGreetings: greeted, they have not asked yet
	for i := range all {
		all[i] = s.greet()
	}
	s.start(taken, 1)
	for _, c := range all {
		if err := c.Send(s.ctx, s.spec); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
			_, errs[i] = c.Recv(ctx)
			cancel()
		}()
	}
	wg.Wait()
	var waiting []*exchange.Conn
	for i, err := range errs {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			waiting = append(waiting, all[i])
		case err == nil || !strings.Contains(err.Error(), "this server is busy: 8 clients are waiting"):
			t.Errorf("client %d: %v; want it waiting, or told at once that the server is busy", i, err)
		}
	}
	if len(waiting) != maxWaiting {
		t.Errorf("%d clients waiting; want %d", len(waiting), maxWaiting)
	}
	// The greetings' goroutines end once their clients are in the
	// lobby or told it is full.
	grew := 0
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if grew = runtime.NumGoroutine() - before; grew <= 4 || time.Now().After(deadline) {
			break
		}
	}
	if grew > 4 {
		t.Errorf("%d clients waiting grew %d goroutines", len(waiting), grew)
	}
	// Still waiting, each for 300 ms, all at once (one after the other
	// they took 2.4 s).
	errs = make([]error, len(waiting))
	for i, c := range waiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, 300*time.Millisecond)
			_, errs[i] = c.Recv(ctx)
			cancel()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiting client %d: %v; want it waiting", i, err)
		}
	}
}

// TestServeGroupWaits: while the lobby waits for a test's other threads,
// its first is sent Alives, so that the client's peer timeout does not
// fire; at groupWait it is told how many came, and the client behind it
// is served. The first's Alives stopped once it was taken.
func TestServeGroupWaits(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = 3 * time.Second
	s := newServing(t, false, nil)
	c, err := s.hello(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sp := s.spec
	sp.Threads, sp.NumQPs, sp.Group = 2, 1, 3
	asked := time.Now()
	if err := c.Send(s.ctx, sp); err != nil {
		t.Fatal(err)
	}
	s.sentQueued(c, "a thread waiting for its others")
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	_, err = c.Recv(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "a test of 2 threads: 1 of its connections came in 3s") {
		t.Errorf("a thread whose others never came: %v", err)
	}
	if took := time.Since(asked); took < groupWait {
		t.Errorf("a thread whose others never came was told so %v after it asked; want it waiting groupWait, %v", took, groupWait)
	}
}

// TestFirstWaitInterrupted: a client stopped while it waits for its turn
// (a server that sends Alives) stops at once, where it waited 5 s more.
func TestFirstWaitInterrupted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server sends Alives until the test ends, and is gone when it
	// has: left to run 3 s, it held its connection (a socket whose peer
	// had closed) and a goroutine into the tests after this one, which a
	// leak check there counted.
	quit, served := make(chan struct{}), make(chan struct{})
	defer func() {
		close(quit)
		ln.Close()
		<-served
	}()
	go func() {
		defer close(served)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		stop := exchange.NewConn(nc).KeepAlive(20 * time.Millisecond)
		select {
		case <-quit:
		case <-time.After(3 * time.Second):
		}
		stop()
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	h := &heardConn{Conn: nc}
	c := exchange.NewConn(h)
	ctx, cancel := context.WithCancel(context.Background())
	wctx, stop := firstWait(ctx, h, 200*time.Millisecond, "client")
	defer stop()
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	_, err = c.RecvSetup(wctx)
	if took := time.Since(began); !errors.Is(err, context.Canceled) || took > 3*time.Second {
		t.Errorf("a wait stopped after 300 ms: %v after %v; want cancelled at once", err, took)
	}
}

// reported waits up to within for done to have got n errors that say
// what, and returns those it got.
func (s *serving) reported(what string, n int, within time.Duration) []error {
	s.t.Helper()
	var got []error
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		got = got[:0]
		for _, r := range s.reports() {
			if strings.Contains(r.Error(), what) {
				got = append(got, r)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
	}
}

// askThread has the client on c ask for thread i of a test of threads
// threads in group, and waits until it is in line.
func (s *serving) askThread(c *exchange.Conn, size uint32, i, threads uint16, group uint64) {
	s.t.Helper()
	var told atomic.Bool
	c.OnQueued(func(exchange.Queued) { told.Store(true) })
	sp := s.spec
	sp.Size, sp.Threads, sp.Thread, sp.Group, sp.NumQPs = size, threads, i, group, 1
	if err := c.Send(s.ctx, sp); err != nil {
		s.t.Fatal(err)
	}
	s.inLine(c, told.Load)
}

// TestServeOnceGroupGone: a one-test server whose first client, a test
// of several threads, goes away (its one connection) while the lobby
// waits for its others has run no test, and takes the next client's.
// It took its one test as the threads' first came to the head of the
// line, and refused every client after: "this server runs one test, and
// has taken another client's", until stopped.
func TestServeOnceGroupGone(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = 5 * time.Second
	s := newServing(t, true, nil)
	c := s.greet()
	s.askThread(c, 64, 0, 2, 42) // thread 1 never comes
	c.Close()                    // the client is killed
	if got := s.reported("went away while it waited its turn", 1, 5*time.Second); len(got) != 1 {
		t.Fatalf("the thread gone: reports %v; want it reported gone", s.reports())
	}
	d := s.greet()
	if err := s.ask(d, s.spec, 5*time.Second); err == nil || !strings.Contains(err.Error(), "device") {
		t.Errorf("the next client of a one-test server that ran no test: %v; want its test run, told the device is not there", err)
	}
	select {
	case err := <-s.ended:
		if err == nil || !strings.Contains(err.Error(), "device") {
			t.Errorf("the one-test server ended with %v; want its one test's failure", err)
		}
		s.ended <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Error("the one-test server did not end within 5 s of its test")
	}
}

// TestServeGroupWaitHolds: a test of several threads whose other thread
// never comes holds the head of the line for groupWait from when it came
// there, however many connections that are no test (a TCP health check,
// every 300 ms here) come meanwhile; then it is taken, and the client
// behind it after it. Each such connection started the wait again, so
// that the client behind waited as long as they came.
func TestServeGroupWaitHolds(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = 2 * time.Second
	taken := make(chan uint32, 8)
	s := newServing(t, false, func(spec exchange.TestSpec) error {
		taken <- spec.Size
		return nil
	})
	g, b := s.greet(), s.greet()
	began := time.Now()
	s.askThread(g, 3, 0, 2, 42) // thread 1 never comes
	var told atomic.Bool
	b.OnQueued(func(exchange.Queued) { told.Store(true) })
	sp := s.spec
	sp.Size = 4
	if err := b.Send(s.ctx, sp); err != nil {
		t.Fatal(err)
	}
	s.inLine(b, told.Load)
	quit, checked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(checked)
		for {
			select {
			case <-quit:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if nc, err := net.Dial("tcp", s.addr); err == nil {
				nc.Close()
			}
		}
	}()
	defer func() {
		close(quit)
		<-checked
	}()
	const within = 8 * time.Second
	for _, want := range []uint32{3, 4} {
		select {
		case got := <-taken:
			if got != want {
				t.Errorf("took test %d; want %d", got, want)
			}
		case <-time.After(within - time.Since(began)):
			t.Fatalf("test %d not taken within %v of its thread's coming to the head, with a groupWait of %v and health checks every 300 ms (%d reports)",
				want, within, groupWait, len(s.reports()))
		}
	}
	if took := time.Since(began); took < groupWait-100*time.Millisecond {
		t.Errorf("the client behind the threads' first was taken after %v; want it behind the threads' wait of %v", took, groupWait)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
	defer cancel()
	if _, err := g.Recv(ctx); err == nil || !strings.Contains(err.Error(), "a test of 2 threads: 1 of its connections came in 2s") {
		t.Errorf("the thread whose other never came: %v", err)
	}
}

// TestServeRefusesAtOnce: a test over serve's limits, asked for while
// another test runs, is refused at once, not at its turn, and reported
// as the refusal it was, once; Admit, which would be asked at its turn,
// never sees it. A test of several threads is refused whole: every one
// of its connections is told, at once, whichever of them is over the
// limits, whether it asked before that one (it waited in the lobby) or
// after (here -q 65 --threads 2: 33 QPs and 32, only the first over).
// It waited for the tests before it, however long they ran, to learn it
// could never run; and where only its first connection was over the
// limits, its others waited for it in the lobby, until groupWait at the
// head of the line, holding up the clients behind, and were reported
// again: "a test of 2 threads: 1 of its connections came in".
func TestServeRefusesAtOnce(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = time.Second // a thread left in the lobby is reported within the test
	s, taken, release := held(t)
	s.start(taken, 1)
	one := s.greet()
	sp := s.overLimits()
	sp.Size = 5
	began := time.Now()
	if err := s.ask(one, sp, 3*time.Second); err == nil || !strings.Contains(err.Error(), "65 QPs exceed this server's maximum of 64") {
		t.Errorf("a test over the limits, behind another: %v after %v; want it refused at once", err, time.Since(began))
	}
	// threads asks for a test of size of 2 threads in group, thread i
	// of qps[i] QPs, in the order given, each once the one before is in
	// the lobby or refused.
	threads := func(name string, size uint32, group uint64, qps [2]uint16, order [2]int, want string) {
		t.Helper()
		conns := [2]*exchange.Conn{s.greet(), s.greet()}
		defer func() {
			for _, c := range conns { // as a client whose thread failed
				c.Close()
			}
		}()
		errs := [2]chan error{make(chan error, 1), make(chan error, 1)}
		for _, i := range order {
			tsp := s.spec
			tsp.Size, tsp.Threads, tsp.Thread, tsp.Group, tsp.NumQPs = size, 2, uint16(i), group, qps[i]
			var told atomic.Bool
			conns[i].OnQueued(func(exchange.Queued) { told.Store(true) })
			go func() { errs[i] <- s.ask(conns[i], tsp, 3*time.Second) }()
			for deadline := time.Now().Add(2 * time.Second); !told.Load() && len(errs[i]) == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
		for i, ch := range errs {
			if err := <-ch; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: thread %d of a test over the limits, behind another: %v; want it refused at once: %q", name, i, err, want)
			}
		}
	}
	threads("both over", 6, 11, [2]uint16{40, 40}, [2]int{0, 1}, "a test of 2 threads of at least 79 QPs (thread 0 has 40) exceeds this server's maximum of 64 QPs")
	const uneven = "a test of 2 threads of at least 65 QPs (thread 0 has 33) exceeds this server's maximum of 64 QPs"
	threads("the first over, asking first", 7, 12, [2]uint16{33, 32}, [2]int{0, 1}, uneven)
	threads("the first over, asking last", 8, 13, [2]uint16{33, 32}, [2]int{1, 0}, uneven)
	close(release)
	s.reported("refused", 4, 3*time.Second)
	time.Sleep(groupWait + 500*time.Millisecond) // any other report: a thread left in the lobby
	refused := s.reported("refused", 5, 0)
	if len(refused) != 4 {
		t.Errorf("done got %d refusals; want the four tests refused, once each", len(refused))
	}
	for _, r := range refused {
		if !errors.Is(r, exchange.ErrOverLimit) {
			t.Errorf("done got %v; want a refusal over the limits", r)
		}
	}
	if all := s.reports(); len(all) != len(refused)+1 {
		t.Errorf("done got %q; want only the refusals and the first test's failure (no device)", all)
	}
	select {
	case got := <-taken:
		t.Errorf("Admit saw test %d; want only the first", got)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestServeDropsSilentClients: a client waiting its turn that sends
// nothing, not even an Alive, for the server's peer timeout (here 2 s),
// whether since its last Alive or since it asked for its test (one
// stopped before its first, or a client of the protocol alone that sends
// none), is dropped, told why (it was stopped, or its host is gone) and
// reported; one that keeps sending Alives waits on, and is taken at its
// turn. The silent one stayed as long as its connection did, for ever
// where it was stopped, and then cost its turn the peer timeout and a
// failed test; one that never sent an Alive was never judged.
// (t.Parallel: as TestServeTellsQueuedClients.)
func TestServeDropsSilentClients(t *testing.T) {
	t.Parallel()
	s, taken, release := heldLocal(t, Local{IdleTimeout: 2 * time.Second})
	live, stopped, mute := s.greet(), s.greet(), s.greet()
	s.start(taken, 1)
	queue := func(c *exchange.Conn, size uint32) {
		t.Helper()
		var told atomic.Bool
		c.OnQueued(func(exchange.Queued) { told.Store(true) })
		sp := s.spec
		sp.Size = size
		if err := c.Send(s.ctx, sp); err != nil {
			t.Fatal(err)
		}
		s.inLine(c, told.Load)
	}
	defer live.KeepAlive(100 * time.Millisecond)()
	queue(live, 2)
	queue(stopped, 3)
	if err := stopped.Send(s.ctx, exchange.Alive{}); err != nil { // then it is stopped
		t.Fatal(err)
	}
	queue(mute, 4) // a Hello and a TestSpec, then nothing
	began := time.Now()
	const want = "the server gave up on this client, which had sent nothing for 2s while it waited its turn"
	for _, c := range []struct {
		name string
		c    *exchange.Conn
	}{{"silent since its first Alive", stopped}, {"silent since its test", mute}} {
		ctx, cancel := context.WithTimeout(s.ctx, 8*time.Second)
		_, err := c.c.Recv(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a client waiting its turn, %s: %v after %v; want %q", c.name, err, time.Since(began), want)
		}
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("the silent clients were dropped %v after the last asked; want about the peer timeout, 2 s", took)
	}
	if got := s.reported("sent nothing for 2s while it waited its turn", 1, 0); len(got) != 0 {
		t.Errorf("done got %v while the first test ran", got)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 300*time.Millisecond)
	_, err := live.Recv(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a client that keeps alive: %v; want it waiting", err)
	}
	close(release)
	select {
	case got := <-taken:
		if got != 2 {
			t.Errorf("took test %d; want 2", got)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("test 2 not taken within 3 s of the first's end")
	}
	select {
	case got := <-taken:
		t.Errorf("took test %d; want none after 2", got)
	case <-time.After(300 * time.Millisecond):
	}
	if got := s.reported("sent nothing for 2s while it waited its turn (stopped or hung?)", 2, 3*time.Second); len(got) != 2 || !KeepsWaiting(got[0]) || !KeepsWaiting(got[1]) {
		t.Errorf("done got %v; want the two silent clients reported dropped", s.reports())
	}
}
