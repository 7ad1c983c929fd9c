//go:build linux && cgo

package rdmatest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// recorder is a testing.TB that keeps the errors and log lines reported
// to it.
type recorder struct {
	testing.TB
	errs, logs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckGrowthSeesLeaks leaks 500 objects on the Go heap, then with
// malloc (256 bytes each with glibc's per-thread caches off, 4 KiB with
// them on, past the wider bound), then a file descriptor, and checks that
// CheckGrowth reports each leak where it happened, and nothing when
// nothing leaked.
func TestCheckGrowthSeesLeaks(t *testing.T) {
	t.Setenv(RequireEnv, "0") // without the rdma tool its check is only logged as off
	cSize := 256
	if !tcacheOff() {
		cSize = 4096
	}
	var kept [][]byte
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cases := []struct {
		name string
		leak func()
		want string // "" when no error is expected
	}{
		{"nothing", func() {}, ""},
		{"Go heap", func() {
			for range 500 {
				kept = append(kept, make([]byte, 256))
			}
		}, "the live Go heap grew"},
		{"C heap", func() {
			for range 500 {
				cLeak(cSize)
			}
		}, "the C heap in use grew"},
		{"a file descriptor", func() {
			f, err := os.Open(os.Args[0])
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}, "open file descriptors went from"},
	}
	for _, c := range cases {
		a := Measure(t)
		c.leak()
		b := Measure(t)
		r := &recorder{TB: t}
		CheckGrowth(r, a, b, 500, "leaks")
		got := strings.Join(r.errs, "; ")
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: CheckGrowth reported %q", c.name, got)
		case c.want != "" && (len(r.errs) != 1 || !strings.Contains(got, c.want)):
			t.Errorf("%s: CheckGrowth reported %q, want one error with %q", c.name, got, c.want)
		}
	}
	runtime.KeepAlive(kept)
}

// TestCheckGrowthRDMA: a change in the RDMA objects' counts either way
// fails CheckGrowth; counts it could not take fail it under
// GORPERF_REQUIRE_DEVICE=1 and are logged as an unchecked check otherwise.
func TestCheckGrowthRDMA(t *testing.T) {
	const one, two = "rxe0: ctx 1 pd 1 cq 0 qp 0 mr 0 srq 0 cm_id 0\n", "rxe0: ctx 1 pd 2 cq 0 qp 0 mr 0 srq 0 cm_id 0\n"
	missing := errors.New(`rdma -j resource show ctx: exec: "rdma": executable file not found in $PATH`)
	for _, c := range []struct {
		name     string
		required string
		a, b     Usage
		err, log string // "" where none is expected
	}{
		{"same", "1", Usage{RDMA: one}, Usage{RDMA: one}, "", ""},
		{"one more", "0", Usage{RDMA: one}, Usage{RDMA: two}, "RDMA objects changed", ""},
		{"one fewer", "1", Usage{RDMA: two}, Usage{RDMA: one}, "RDMA objects changed", ""},
		{"a device's first", "1", Usage{RDMA: "no RDMA objects\n"}, Usage{RDMA: one}, "RDMA objects changed", ""},
		{"no rdma tool, required", "1", Usage{RDMAErr: missing}, Usage{RDMAErr: missing}, "could not be counted: rdma -j", ""},
		{"no rdma tool", "", Usage{RDMAErr: missing}, Usage{RDMAErr: missing}, "", "the RDMA object check is off: rdma -j"},
	} {
		t.Setenv(RequireEnv, c.required)
		c.a.CHeap, c.b.CHeap = 1<<20, 1<<20
		r := &recorder{TB: t}
		CheckGrowth(r, c.a, c.b, 10, "cycles")
		got, logs := strings.Join(r.errs, "; "), strings.Join(r.logs, "; ")
		if c.err == "" && got != "" || c.err != "" && (len(r.errs) != 1 || !strings.Contains(got, c.err)) {
			t.Errorf("%s: reported %q, want %q", c.name, got, c.err)
		}
		if c.log != "" && !strings.Contains(logs, c.log) {
			t.Errorf("%s: logged %q, want %q", c.name, logs, c.log)
		}
	}
}

// TestMeasureWithoutRDMATool: with no rdma tool on PATH, Measure says it
// could not count the RDMA objects, rather than giving an empty count that
// any other compares equal to.
func TestMeasureWithoutRDMATool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	u := Measure(t)
	if u.RDMA != "" || u.RDMAErr == nil || !strings.Contains(u.RDMAErr.Error(), `"rdma"`) {
		t.Errorf("RDMA %q, error %v; want no count and an error naming the rdma tool", u.RDMA, u.RDMAErr)
	}
}

// TestCountOwn: only the objects whose pid is one of this process's
// threads count, by device; the kernel's (no pid) do not; several JSON
// arrays one after another are read as one.
func TestCountOwn(t *testing.T) {
	out := `[{"ifindex":0,"ifname":"rxe0","pdn":0,"users":1,"comm":"ib_core"},` +
		`{"ifindex":0,"ifname":"rxe0","pdn":1,"ctxn":0,"pid":177,"comm":"rping"},` +
		`{"ifindex":0,"ifname":"rxe0","pdn":2,"ctxn":1,"pid":300,"comm":"x"},` +
		`{"ifindex":1,"ifname":"rxe1","pdn":1,"ctxn":0,"pid":301,"comm":"x"}]` + "\n" +
		`[{"ifindex":1,"ifname":"rxe1","pdn":2,"ctxn":0,"pid":300,"comm":"x"}]` + "\n"
	n, err := countOwn([]byte(out), map[int]bool{300: true, 301: true})
	if err != nil || len(n) != 2 || n["rxe0"] != 1 || n["rxe1"] != 2 {
		t.Errorf("countOwn: %v, %v; want rxe0 1, rxe1 2", n, err)
	}
	if n, err := countOwn([]byte("[]\n"), map[int]bool{300: true}); err != nil || len(n) != 0 {
		t.Errorf("countOwn of none: %v, %v", n, err)
	}
	if _, err := countOwn([]byte("Failed to open NETLINK_RDMA socket"), nil); err == nil {
		t.Error("countOwn of no JSON: no error")
	}
}

// TestCheckSteadyGrowth: memory that grows in the first half only is
// warming up; growth in the second half past CheckGrowth's bounds is a
// leak; the fds and RDMA objects must be the same at the end as at the
// start, whatever they were in the middle.
func TestCheckSteadyGrowth(t *testing.T) {
	t.Setenv(RequireEnv, "0")
	at := func(anon int, cheap uint64) Usage {
		return Usage{AnonKiB: anon, CHeap: cheap, RDMA: "no RDMA objects\n"}
	}
	fds := func(n int) Usage {
		u := at(10000, 0)
		u.FDs = n
		return u
	}
	pd := at(10000, 0)
	pd.RDMA = "rxe0: ctx 1 pd 1 cq 0 qp 0 mr 0 srq 0 cm_id 0\n"
	for _, c := range []struct {
		name    string
		a, b, c Usage
		want    string
	}{
		{"flat", at(10000, 0), at(10100, 0), at(10200, 0), ""},
		{"growth in the first half only", at(10000, 0), at(26000, 1<<20), at(26100, 1<<20), ""},
		{"a step in the second half", at(10000, 0), at(10100, 0), at(26000, 0), "anonymous RSS grew by 15900 KiB"},
		{"steady growth", at(10000, 0), at(20000, 0), at(30000, 0), "anonymous RSS grew by 10000 KiB"},
		{"the C heap grew in the second half", at(10000, 0), at(10100, 0), at(10100, 4<<20), "the C heap in use grew"},
		{"an fd open in the middle only", fds(7), fds(8), fds(7), ""},
		{"an fd more at the end", fds(7), fds(7), fds(8), "open file descriptors went from 7 to 8 over 1000 tests"},
		{"an fd more from the middle on", fds(7), fds(8), fds(8), "open file descriptors went from 7 to 8 over 1000 tests"},
		{"a PD more at the end", at(10000, 0), at(10000, 0), pd, "RDMA objects changed over 1000 tests"},
	} {
		r := &recorder{TB: t}
		CheckSteadyGrowth(r, c.a, c.b, c.c, 500, "tests")
		got := strings.Join(r.errs, "; ")
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: reported %q", c.name, got)
		case c.want != "" && (len(r.errs) != 1 || !strings.Contains(got, c.want)):
			t.Errorf("%s: reported %q, want one error with %q", c.name, got, c.want)
		}
	}
}

// TestMeasureTurnsTHPOff: after a Measure, khugepaged leaves this process
// alone (Measure's doc says why).
func TestMeasureTurnsTHPOff(t *testing.T) {
	if _, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); errors.Is(err, unix.EINVAL) {
		t.Skipf("prctl PR_GET_THP_DISABLE: %v (a kernel without THP, or a sandbox)", err)
	}
	Measure(t)
	off, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	if err != nil || off != 1 {
		t.Errorf("prctl PR_GET_THP_DISABLE after Measure: %d, %v; want 1", off, err)
	}
}
