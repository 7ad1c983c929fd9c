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

// TestCloseErrorNamesPD: a Conn's Close that an MR on its PD makes fail
// says so in one line that names the Conn and its PD, and nothing of the
// Conn's handle on the device, which only that PD keeps open; the Close
// after the MR's closes both (nil). (The old error was two lines,
// "ibv_dealloc_pd: 1 object ... still open" and "ibv_close_device: 1
// object (a PD, CQ or channel) still open", naming neither rdmacm nor
// the Conn.)
func TestCloseErrorNamesPD(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP,
		&rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, buf) })
	mr, err := cli.PD().RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mr.Close() })

	err = cli.Close()
	want := fmt.Sprintf("rdmacm: close %s->%s: the Conn's PD: ibv_dealloc_pd: 1 object", cli.LocalAddr(), cli.RemoteAddr())
	if !errors.Is(err, syscall.EBUSY) || err == nil || !strings.HasPrefix(err.Error(), want) ||
		strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "ibv_close_device") {
		t.Errorf("Close with an MR open on the PD: %v;\nwant one line, matching EBUSY, that begins %q and says nothing of ibv_close_device", err, want)
	}
	closeOK(t, srv)
	closeOK(t, mr)
	if err := cli.Close(); err != nil {
		t.Fatalf("Close again once the MR is closed: %v", err)
	}
	if _, err := cli.Context().Events(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Events on the Conn's Context after the second Close: %v, want ErrClosed: the handle is still open", err)
	}
}
