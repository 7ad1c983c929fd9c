//go:build linux && cgo

package ibverbs

import (
	"sync"
	"testing"
	"time"
)

// TestLockBinds: lockBinds takes the closeMu of each window and MR that a
// list's OpBindMW requests name once, however many requests name it (a
// second Lock of one would never return), and nothing for other opcodes
// or a request without its window or MR; unlockBinds releases them all.
// Posts that take the same windows and MRs in other orders, beside a
// QP.BindMW's (a window's, then an MR's) and Closes, all finish.
func TestLockBinds(t *testing.T) {
	mws := []*MW{{}, {}}
	mrs := []*MR{{}, {}}
	bind := func(w *MW, r *MR) SendWR {
		return SendWR{Opcode: OpBindMW, Bind: &MWBind{MW: w, MR: r}}
	}
	wrs := []SendWR{bind(mws[0], mrs[0]), {Opcode: OpRDMAWrite}, bind(mws[1], mrs[0]),
		bind(mws[0], mrs[1]), {Opcode: OpBindMW}, bind(nil, nil)}
	done := make(chan struct{})
	go func() { lockBinds(wrs); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("lockBinds of a list naming a window and an MR twice did not return in 10 s")
	}
	for i := range 2 {
		if mws[i].closeMu.TryLock() || mrs[i].closeMu.TryLock() {
			t.Fatalf("window or MR %d not locked by lockBinds", i)
		}
	}
	unlockBinds(wrs)
	for i := range 2 {
		if !mws[i].closeMu.TryLock() || !mrs[i].closeMu.TryLock() {
			t.Fatalf("window or MR %d still locked after unlockBinds", i)
		}
		mws[i].closeMu.Unlock()
		mrs[i].closeMu.Unlock()
	}

	orders := [][]SendWR{
		{bind(mws[0], mrs[0]), bind(mws[1], mrs[1])},
		{bind(mws[1], mrs[1]), bind(mws[0], mrs[0])},
		{bind(mws[1], mrs[0]), bind(mws[0], mrs[1])},
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100000 {
				switch g {
				case 3, 4: // QP.BindMW's order
					w, r := mws[g%2], mrs[(g+1)%2]
					w.closeMu.Lock()
					r.closeMu.Lock()
					r.closeMu.Unlock()
					w.closeMu.Unlock()
				case 5: // Closes
					mws[0].closeMu.Lock()
					mws[0].closeMu.Unlock()
					mrs[1].closeMu.Lock()
					mrs[1].closeMu.Unlock()
				default:
					lockBinds(orders[g])
					unlockBinds(orders[g])
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("posts, binds and Closes taking the same locks did not finish in 30 s")
	}
}
