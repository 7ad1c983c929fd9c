//go:build linux && cgo

package bench

import (
	"strings"
	"testing"
	"time"
)

// TestIdleAfterCompletions: a peer that stops answering once completions
// have come in the run is not blamed on the path between the two sides'
// GIDs, which carried them: the error says how many came, and, where the
// peer has sent nothing on the control connection either, not even a
// keepalive, that it is stopped or hung. It gave the GID and VLAN hint on
// every Ethernet port (a server stopped with SIGSTOP mid-run).
func TestIdleAfterCompletions(t *testing.T) {
	newSession := func(heard time.Time) *session {
		s := roceSession("198.18.0.2", "198.18.0.1")
		s.heard = func() time.Time { return heard }
		return s
	}
	for _, c := range []struct {
		name    string
		heard   time.Duration // how long ago the peer last sent something; 0: never
		got     uint64
		want    string
		notWant string
	}{
		{"stopped", 10 * time.Second, 1234, "the peer stopped answering, after 1234 completions and messages from it in the run: no completion for 10s, and it has sent nothing for 10s, not even a keepalive (was it stopped, with Ctrl-Z or SIGSTOP, or hung, or is the network between the two sides down?)", ""},
		{"one", 10 * time.Second, 1, "the peer stopped answering, after 1 completion or message from it in the run: no completion", ""},
		{"keepalives come", 100 * time.Millisecond, 1234, "the peer stopped answering, after 1234 completions and messages from it in the run: no completion for 10s (is it still running?)", "may not reach"},
		{"nothing came", 10 * time.Second, 0, "may not reach each other: different VLANs or subnets? --source_ip or -x picks a GID. The GIDs are this side's GID 198.18.0.2 on rxeveth1 and the peer's 198.18.0.1)", "keepalive"},
	} {
		var heard time.Time
		if c.heard > 0 {
			heard = time.Now().Add(-c.heard)
		}
		got := newSession(heard).idleAfter("completion", 10*time.Second, c.got).Error()
		if !strings.Contains(got, c.want) || c.notWant != "" && strings.Contains(got, c.notWant) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if c.got > 0 && strings.Contains(got, "VLAN") {
			t.Errorf("%s: %q blames the path, which carried %d completions", c.name, got, c.got)
		}
	}
	// A latency loop's wait counts what the run's loops got (s.got).
	s := newSession(time.Now().Add(-10 * time.Second))
	s.got = 7
	if got, want := s.idleErr("message", 10*time.Second).Error(), "after 7 completions and messages from it in the run: no message for 10s, and it has sent nothing"; !strings.Contains(got, want) {
		t.Errorf("latency: %q, want %q", got, want)
	}
}
