//go:build linux && cgo

package rdmamsg_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestCloseSilentPeer: Close with a message on its way to a peer that
// went silent (its QP in the error state: its device drops what comes and
// answers nothing; with AckTimeout 20, 4.3 s, the retries would take half
// a minute) returns by the write deadline, where one is set, or after
// Close's 5 s without one, and its error counts the message that may not
// have arrived and matches os.ErrDeadlineExceeded. (Close waited for the
// sends without a bound: with the default retry count on soft-RoCE, which
// retries for ever, it never returned.)
func TestCloseSilentPeer(t *testing.T) {
	for _, tc := range []struct {
		name            string
		deadline        time.Duration // SetWriteDeadline's, from now; 0 for none
		atLeast, atMost time.Duration // how long Close takes
	}{
		{"WriteDeadline", 300 * time.Millisecond, 150 * time.Millisecond, 3 * time.Second},
		{"NoDeadline", 0, 4500 * time.Millisecond, 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := pair(t, &rdmamsg.Config{KeepAlive: -1},
				&rdmamsg.Config{KeepAlive: -1, CM: rdmacm.Config{AckTimeout: 20}})
			t.Cleanup(func() { srv.Close() })
			if err := srv.QP().ToError(); err != nil {
				t.Fatal(err)
			}
			if err := cli.Send(timeout(t, 10*time.Second), message(0, 10)); err != nil {
				t.Fatal(err)
			}
			if tc.deadline > 0 {
				if err := cli.SetWriteDeadline(time.Now().Add(tc.deadline)); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- cli.Close() }()
			select {
			case err := <-closed:
				d := time.Since(start)
				t.Logf("Close returned after %v: %v", d, err)
				if d < tc.atLeast || d > tc.atMost {
					t.Errorf("Close took %v, want %v to %v", d, tc.atLeast, tc.atMost)
				}
				if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "1 message sent may not have reached") {
					t.Errorf("Close: %v; want the message that may not have arrived, and os.ErrDeadlineExceeded", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Close has not returned 20 s after it began, its peer silent")
			}
		})
	}
}
