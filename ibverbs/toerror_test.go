//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// ToError of a QP in RESET is refused, by the kernel, and the error says
// why: ERR is reached from any state but RESET. The doc had said from any,
// and the error said only that the QP was in RESET.
func TestToErrorInReset(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	qp := p.spareRCQP(t)
	err := qp.ToError()
	if want := "ERR is reached from any state but RESET"; !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("ToError in RESET: %v; want EINVAL saying %q", err, want)
	}
	if err := qp.ToInit(ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}); err != nil {
		t.Fatal(err)
	}
	if err := qp.ToError(); err != nil {
		t.Errorf("ToError in INIT: %v", err)
	}
	if s, err := qp.State(); err != nil || s != ibverbs.QPStateError {
		t.Errorf("state after ToError: %v, %v; want ERR", s, err)
	}
}
