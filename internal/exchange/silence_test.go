package exchange

import (
	"strings"
	"testing"
	"time"
)

// TestSilenceErrorNamesTheNetwork: a silent peer's error names a
// partition as a cause, not only a stopped process: a host that
// vanished or a cut network is silent the same way (it blamed the peer's
// process alone, wrong where an address was removed or the link cut).
func TestSilenceErrorNamesTheNetwork(t *testing.T) {
	msg := (&SilenceError{After: 10 * time.Second}).Error()
	for _, want := range []string{"sent nothing for 10s", "stopped or hung", "the network to it is gone", "--peer-timeout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
