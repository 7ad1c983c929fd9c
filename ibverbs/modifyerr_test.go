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

// A state transition the verb refuses says the state the QP is in and the
// one the transition needs; Modify with a nil attr is EINVAL, no panic.
func TestModifyTransitionError(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	qp := p.spareRCQP(t)
	cp := ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}
	check := func(what string, err error, want string) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s: %v; want EINVAL saying %q", what, err, want)
		}
	}
	check("ToRTR in RESET", qp.ToRTR(p.b.ep, cp), "the QP is in RESET, and RTR is reached from INIT")
	check("ToRTS in RESET", qp.ToRTS(cp), "the QP is in RESET, and RTS is reached from RTR, RTS, SQD or SQE")
	if err := qp.ToInit(cp); err != nil {
		t.Fatal(err)
	}
	check("ToRTS in INIT", qp.ToRTS(cp), "the QP is in INIT, and RTS is reached from RTR, RTS, SQD or SQE")
	nilErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return qp.Modify(nil, ibverbs.QPAttrState)
	}()
	check("Modify(nil)", nilErr, "nil QPAttr")
	if s, err := qp.State(); err != nil || s != ibverbs.QPStateInit {
		t.Errorf("state after the refused moves: %v, %v; want INIT", s, err)
	}
	if err := qp.ToRTR(p.b.ep, cp); err != nil {
		t.Errorf("ToRTR from INIT: %v", err)
	}
}

// Query's CurState is the state the QP is in, where soft-RoCE reports a
// cur_qp_state of RESET for a QP in RTS.
func TestQueryCurState(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	a, err := p.a.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.State != ibverbs.QPStateRTS || a.CurState != a.State {
		t.Errorf("Query: State %v, CurState %v; want RTS for both", a.State, a.CurState)
	}
}
