//go:build linux && cgo

package ibverbs_test

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func rssKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestCreateCloseCycles creates and closes a PD, buffer, MR, channel, CQ
// and QP 10,000 times and checks that file descriptors and memory stay flat.
func TestCreateCloseCycles(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	n := 10000
	if testing.Short() {
		n = 500
	}
	cycle := func() {
		pd, err := ctx.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		buf, err := ibverbs.NewBuffer(8192, ibverbs.BufferOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := ctx.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := ctx.CreateCQ(16, ch)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []closer{qp, cq, ch, mr, buf, pd} {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// RSS is read after a GC that returns freed heap to the OS. The first
	// half of the run warms the Go and C allocators up; a leak shows as
	// growth across the second half.
	rss := func() int {
		runtime.GC()
		debug.FreeOSMemory()
		return rssKiB(t)
	}
	for range 200 {
		cycle()
	}
	fd0, rss0, res0 := openFDs(t), rss(), rdmaResources()
	for range n / 2 {
		cycle()
	}
	rssHalf := rss()
	for range n / 2 {
		cycle()
	}
	fd1, rss1, res1 := openFDs(t), rss(), rdmaResources()
	t.Logf("%d cycles: fds %d -> %d, RSS %d -> %d -> %d KiB", n, fd0, fd1, rss0, rssHalf, rss1)
	if fd1 != fd0 {
		t.Errorf("file descriptors grew from %d to %d", fd0, fd1)
	}
	if res1 != res0 {
		t.Errorf("the kernel's RDMA resource counts changed:\n%s->\n%s", res0, res1)
	}
	// 2 MiB over 5,000 cycles is 400 bytes a cycle: less than any object
	// this cycle makes (the QP's post scratch alone is over 2 KiB), more
	// than the allocators' noise (seen: up to about 600 KiB).
	if rss1-rssHalf > 2048 {
		t.Errorf("RSS grew by %d KiB over the last %d cycles", rss1-rssHalf, n/2)
	}
}

// rdmaResources is `rdma resource show`: the kernel's count of PDs, CQs,
// QPs and MRs per device ("" where the tool is missing).
func rdmaResources() string {
	out, _ := exec.Command("rdma", "resource", "show").Output()
	return string(out)
}
