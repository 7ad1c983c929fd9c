//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestCloseRetry: a Conn's Close that an MR on its PD makes fail (EBUSY)
// is tried again by the next Close, once the MR is closed, and that one
// frees the PD and the Conn's handle on the device: the PD takes no MR,
// the handle no Events call, and the device's shared event stream, which
// the two Conns' handles alone held open, closes. (The old Close ran
// once: the second returned nil and did nothing, and the PD and handle
// stayed open for good.) The failed Close says so in one line that
// names the Conn and its PD, and nothing of the Conn's handle on the
// device, which only that PD keeps open (it said "ibv_dealloc_pd: 1
// object ... still open" and "ibv_close_device: 1 object (a PD, CQ or
// channel) still open", naming neither rdmacm nor the Conn).
func TestCloseRetry(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP,
		&rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	events, err := cli.Context().Events()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, buf) })
	pd := cli.PD()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })

	err = cli.Close()
	if !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("Close with an MR open on the PD: %v, want EBUSY", err)
	}
	want := fmt.Sprintf("rdmacm: close %s->%s: the Conn's PD: ibv_dealloc_pd: 1 object", cli.LocalAddr(), cli.RemoteAddr())
	if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") || strings.Contains(msg, "ibv_close_device") {
		t.Errorf("Close with an MR open on the PD: %v;\nwant one line that begins %q and says nothing of ibv_close_device", err, want)
	}
	if !errors.Is(cli.Err(), rdmacm.ErrClosed) {
		t.Errorf("Err after the failed Close: %v, want ErrClosed", cli.Err())
	}
	select {
	case <-cli.Done():
	default:
		t.Error("Done is open after the failed Close")
	}

	closeOK(t, srv)
	closeOK(t, mr)
	if err := cli.Close(); err != nil {
		t.Fatalf("Close again once the MR is closed: %v", err)
	}
	if mr2, err := pd.RegMR(buf, ibverbs.AccessLocalWrite); !errors.Is(err, ibverbs.ErrClosed) {
		if mr2 != nil {
			mr2.Close()
		}
		t.Errorf("RegMR on the PD after the second Close: %v, want ErrClosed: the PD is still allocated", err)
	}
	if _, err := cli.Context().Events(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Events on the Conn's Context after the second Close: %v, want ErrClosed: the handle is still open", err)
	}
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-events:
		case <-deadline:
			t.Fatal("the device's event stream is still open 5 s after both Conns closed: a handle on the device is")
		}
	}
	if err := cli.Close(); err != nil {
		t.Errorf("a third Close: %v, want nil", err)
	}
}
