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

// A GID index that names no GID in the port's table (past its end, or an
// empty entry) fails Connect's move to RTR and CreateAH with ENODATA, and
// the error names the index and says the table has no GID there, where it
// said only "ibv_modify_qp: no data available".
func TestGIDIndexNotInTable(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	qp := p.spareRCQP(t)
	check := func(what string, err error, index int) {
		t.Helper()
		want := fmt.Sprintf("GID index %d: port %d's GID table has no GID there", index, p.port)
		if !errors.Is(err, syscall.ENODATA) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s: %v; want ENODATA saying %q", what, err, want)
		}
	}
	check("Connect with GID index 250", qp.Connect(p.b.ep, ibverbs.ConnParams{Port: p.port, GIDIndex: 250}), 250)
	ah, err := p.a.pd.CreateAHTo(p.b.ep, p.port, 200)
	if err == nil {
		closeOK(t, ah)
	}
	check("CreateAHTo with GID index 200", err, 200)
}
