//go:build linux && cgo

package ibverbs_test

import (
	"testing"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestEventsEndBeforeDeviceLetGo: the last handle on a device that
// closes has stopped the device's async event loop (its Events channel
// is closed) by the time it lets the device's state go, so that a handle
// made on the device from then on (WrapContext, here in a hook of the
// Close), whose Events starts a new loop on the same async fd, never
// reads it beside the old one, which would take some of the events and
// lose them. (The old Close stopped the loop only after it had let the
// state go: the old stream was still open when the new one began.)
func TestEventsEndBeforeDeviceLetGo(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	raw := ctx.Raw()
	ev1, err := ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	restore := ibverbs.SetDetachedHook(func(r unsafe.Pointer) {
		if r != raw || ran { // once: the new handle's Close runs it too
			return
		}
		ran = true
		for ended := false; !ended; {
			select {
			case _, ok := <-ev1:
				ended = !ok
			default:
				t.Error("the device's event stream is open after its last handle let the device go")
				ended = true
			}
		}
		w, err := ibverbs.WrapContext(raw)
		if err != nil {
			t.Errorf("WrapContext: %v", err)
			return
		}
		if ev2, err := w.Events(); err != nil || ev2 == ev1 {
			t.Errorf("Events of a new handle: %v (the old stream: %v)", err, ev2 == ev1)
		}
		closeOK(t, w)
	})
	defer restore()
	closeOK(t, ctx)
	if !ran {
		t.Error("the hook did not run")
	}
}
