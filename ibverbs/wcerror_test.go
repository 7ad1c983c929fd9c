//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestWCErrorMatchesStatus: the statuses are errors that errors.Is finds
// in a *WCError (WC.Err) and errors.As takes out, through wrapping, while
// the errors that matched before match as they did, and statuses print as
// they always have.
func TestWCErrorMatchesStatus(t *testing.T) {
	wc := ibverbs.WC{WRID: 3, Status: ibverbs.WCRetryExcErr, QPN: 0x11, VendorErr: 0x81}
	err := fmt.Errorf("put: %w", wc.Err())
	if !errors.Is(err, ibverbs.WCRetryExcErr) {
		t.Errorf("errors.Is(%v, WCRetryExcErr) = false", err)
	}
	for _, other := range []error{ibverbs.WCSuccess, ibverbs.WCRemAccessErr, ibverbs.WCWRFlushErr,
		ibverbs.ErrClosed, os.ErrClosed, syscall.EIO, errors.ErrUnsupported} {
		if errors.Is(err, other) {
			t.Errorf("errors.Is(%v, %v) = true", err, other)
		}
	}
	var st ibverbs.WCStatus
	if !errors.As(err, &st) || st != ibverbs.WCRetryExcErr {
		t.Errorf("errors.As(*WCStatus) gave %v", st)
	}
	var we *ibverbs.WCError
	if !errors.As(err, &we) || we.WRID != 3 {
		t.Errorf("errors.As(*WCError) gave %+v", we)
	}
	// Printing is unchanged: the name alone for a status, the verbs'
	// name with its description for the completion.
	if s := fmt.Sprintf("%v %s", ibverbs.WCRetryExcErr, ibverbs.WCStatus(99)); s != "RETRY_EXC_ERR WCStatus(99)" {
		t.Errorf("statuses print as %q", s)
	}
	const want = "work completion failed: IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded: the peer does not answer), wr_id 3, QPN 0x11, vendor error 0x81"
	if s := wc.Err().Error(); s != want {
		t.Errorf("WCError text %q, want %q", s, want)
	}
	// The errors that matched before still do.
	if !errors.Is(ibverbs.ErrClosed, os.ErrClosed) {
		t.Error("ErrClosed no longer matches os.ErrClosed")
	}
	pe := &ibverbs.PostError{Index: 2, Err: os.NewSyscallError("ibv_post_send", syscall.ENOMEM)}
	if !errors.Is(pe, syscall.ENOMEM) || errors.Is(pe, ibverbs.WCGeneralErr) {
		t.Errorf("PostError matching changed: %v", pe)
	}
}

// TestWCStatusTexts: every status verbs.h defines says what it means in a
// WCError, none the bare "(error)" that MW_BIND_ERR and the reliable
// datagram and tag matching statuses printed; a bind that the MR refuses
// names the access it lacks.
func TestWCStatusTexts(t *testing.T) {
	for s := ibverbs.WCLocLenErr; s <= ibverbs.WCTMRndvIncomplete; s++ {
		msg := (&ibverbs.WC{Status: s}).Err().Error()
		if strings.HasPrefix(s.String(), "WCStatus(") {
			t.Errorf("status %d has no name: %s", uint32(s), msg)
		}
		if strings.Contains(msg, "(error)") || strings.Contains(msg, "(unknown status)") || strings.Contains(msg, "()") {
			t.Errorf("status %v says no more than %q", s, msg)
		}
	}
	if msg := (&ibverbs.WC{Status: ibverbs.WCMWBindErr}).Err().Error(); !strings.Contains(msg, "AccessMWBind") {
		t.Errorf("MW_BIND_ERR reads %q, which names no access", msg)
	}
	if msg := (&ibverbs.WC{Status: ibverbs.WCTMRndvIncomplete + 1}).Err().Error(); !strings.Contains(msg, "(unknown status)") {
		t.Errorf("a status verbs.h does not define reads %q", msg)
	}
}
