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
