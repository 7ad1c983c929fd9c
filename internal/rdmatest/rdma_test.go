//go:build linux && cgo

package rdmatest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// hold opens dev, makes a PD, a CQ and an MR on it, says "ready" and keeps
// them until its standard input closes: RDMA objects of another process.
func hold(dev string) int {
	ctx, err := ibverbs.Open(dev)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cq, err := ctx.CreateCQ(16, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	mr.Close()
	buf.Close()
	cq.Close()
	pd.Close()
	ctx.Close()
	return 0
}

// counts parses Usage.RDMA's line for dev into its counts by kind.
func counts(t *testing.T, rdma, dev string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, l := range strings.Split(rdma, "\n") {
		rest, ok := strings.CutPrefix(l, dev+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.Atoi(f[i+1]); err == nil {
				n[f[i]] = v
			}
		}
	}
	return n
}

// TestMeasureOwnRDMA: the RDMA objects Measure counts are this process's
// only. Another process's PD, CQ and MR leave them as they were (where all
// the host's were counted, they did not); this process's own, made on a
// thread of its own, count, and CheckGrowth reports them; once closed the
// counts are back where they were.
func TestMeasureOwnRDMA(t *testing.T) {
	_, info := Open(t)
	a := Measure(t)
	if a.RDMAErr != nil {
		if Required() {
			t.Fatal(a.RDMAErr)
		}
		t.Skip(a.RDMAErr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := Command(ctx, "hold", info.Name)
	in, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr Output
	other.Stderr = &stderr
	other.WaitDelay = 5 * time.Second
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()
	defer in.Close()
	if l, err := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("the other process: %q, %v; stderr: %s", l, err, stderr.String())
	}
	if b := Measure(t); b.RDMA != a.RDMA {
		t.Errorf("another process's objects counted: before\n%sand with them\n%s", a.RDMA, b.RDMA)
	}
	in.Close()
	if err := other.Wait(); err != nil {
		t.Fatalf("the other process: %v; stderr: %s", err, stderr.String())
	}

	// This process's own, made on a thread locked to the goroutine, and
	// closed there when released.
	type objs struct {
		tid int // the thread that made them
		err error
	}
	made, release := make(chan objs), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var closers []interface{ Close() error }
		closeAll := func() error {
			var errs []error
			for i := len(closers) - 1; i >= 0; i-- {
				errs = append(errs, closers[i].Close())
			}
			return errors.Join(errs...)
		}
		err := func() error {
			ctx, err := ibverbs.Open(info.Name)
			if err != nil {
				return err
			}
			closers = append(closers, ctx)
			pd, err := ctx.AllocPD()
			if err != nil {
				return err
			}
			closers = append(closers, pd)
			cq, err := ctx.CreateCQ(16, nil)
			if err != nil {
				return err
			}
			closers = append(closers, cq)
			buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
			if err != nil {
				return err
			}
			closers = append(closers, buf)
			mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
			if err != nil {
				return err
			}
			closers = append(closers, mr)
			return nil
		}()
		if err != nil {
			made <- objs{err: errors.Join(err, closeAll())}
			return
		}
		made <- objs{tid: syscall.Gettid()}
		<-release
		made <- objs{err: closeAll()}
	}()
	o := <-made
	if o.err != nil {
		t.Fatal(o.err)
	}
	c := Measure(t)
	pdJSON, _ := exec.Command("rdma", "-j", "resource", "show", "pd").Output()
	t.Logf("pid %d, objects made on thread %d:\n%s`rdma -j resource show pd`: %s", os.Getpid(), o.tid, c.RDMA, pdJSON)
	before, with := counts(t, a.RDMA, info.Name), counts(t, c.RDMA, info.Name)
	for _, k := range []string{"ctx", "pd", "cq", "mr"} {
		if with[k] != before[k]+1 {
			t.Errorf("%s: %d before, %d with one more of this process's own:\n%s", k, before[k], with[k], c.RDMA)
		}
	}
	r := &recorder{TB: t}
	CheckGrowth(r, a, c, 1, "cycles")
	if !strings.Contains(strings.Join(r.errs, "; "), "RDMA objects changed") {
		t.Errorf("CheckGrowth with a PD, CQ and MR more reported %q", r.errs)
	}
	close(release)
	if o = <-made; o.err != nil {
		t.Fatal(o.err)
	}
	if d := Measure(t); d.RDMA != a.RDMA {
		t.Errorf("closed, the counts are\n%snot as before\n%s", d.RDMA, a.RDMA)
	}
}
