//go:build linux && cgo

package rdmatest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Logf(string, ...any) {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckGrowthSeesLeaks leaks 500 objects of 256 bytes, on the Go heap
// and then with malloc, and checks that CheckGrowth reports each leak where
// it happened, and nothing when nothing leaked.
func TestCheckGrowthSeesLeaks(t *testing.T) {
	var kept [][]byte
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
				cLeak(256)
			}
		}, "the C heap in use grew"},
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

// TestCheckSteadyGrowth: anonymous RSS that grows through both halves is
// a leak; a step in the second half alone is not; the heaps are checked
// over the second half as CheckGrowth checks them.
func TestCheckSteadyGrowth(t *testing.T) {
	at := func(anon int, cheap uint64) Usage { return Usage{AnonKiB: anon, CHeap: cheap} }
	for _, c := range []struct {
		name    string
		a, b, c Usage
		want    string
	}{
		{"flat", at(10000, 0), at(10100, 0), at(10200, 0), ""},
		{"a step in the second half", at(10000, 0), at(10100, 0), at(26000, 0), ""},
		{"steady growth", at(10000, 0), at(20000, 0), at(30000, 0), "anonymous RSS grew by 10000 KiB"},
		{"a step, and the C heap grew", at(10000, 0), at(10100, 0), at(26000, 1<<20), "the C heap in use grew"},
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
