//go:build linux && cgo

package cli

import (
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestJSONErrorRole: the JSON document of a test whose flags were wrong
// names its role as one that failed after its flags were read does: a
// client where the command line has a server address, else a server,
// and loopback's; serve's is a server's. A flag that could not be
// parsed gave "role": "" (only loopback's was set), where a value
// refused after the parse gave "client".
func TestJSONErrorRole(t *testing.T) {
	for _, tc := range []struct {
		args []string
		role string
	}{
		{[]string{"write-bw", "--json", "--bogus", "198.18.0.1"}, "client"}, // parse: an unknown flag
		{[]string{"write-bw", "--json", "--bogus"}, "server"},
		{[]string{"write-bw", "--json", "-s", "x", "198.18.0.1"}, "client"}, // parse: a bad value
		{[]string{"ib_read_lat", "-s", "x", "--json"}, "server"},
		{[]string{"send-bw", "-bs", "4096", "--json", "-Z"}, "server"},      // a value after letters
		{[]string{"write-bw", "--json", "-n", "3", "198.18.0.1"}, "client"}, // validation
		{[]string{"write-bw", "--json", "-n", "3"}, "server"},
		{[]string{"write-bw", "--json", "198.18.0.1", "198.18.0.2"}, "client"}, // too many arguments
		{[]string{"loopback", "write-bw", "--json", "--bogus"}, "loopback"},
		{[]string{"serve", "--json", "--bogus"}, "server"},
		{[]string{"serve", "--json", "--peer-timeout", "0"}, "server"},
	} {
		r, _, ok := usageDocument(t, tc.args)
		if !ok {
			continue
		}
		if r.Role != tc.role {
			t.Errorf("%q (%s): role %q, want %q", tc.args, r.Error.Message, r.Role, tc.role)
		}
	}
}

// TestHasArgument: how the JSON error's role finds a server address in
// a command line that may not have been parsed to its end.
func TestHasArgument(t *testing.T) {
	fs := newCmdTest(nil, exchange.SendBW, false, nil).Flags()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"host"}, true},
		{[]string{"-s", "4096"}, false},
		{[]string{"-s", "4096", "host"}, true},
		{[]string{"-s4096", "host"}, true},
		{[]string{"-s=4096"}, false},
		{[]string{"-bs", "4096"}, false}, // -b takes no value, -s the next word
		{[]string{"-bs4096"}, false},
		{[]string{"--size", "4096"}, false},
		{[]string{"--size=4096", "host"}, true},
		{[]string{"--json", "host"}, true}, // a switch takes no value
		{[]string{"--json=false"}, false},
		{[]string{"--post-list", "2"}, false}, // perftest's spelling, normalized
		{[]string{"--bogus", "host"}, true},   // an unknown flag: taken to have no value
		{[]string{"-Z", "host"}, true},
		{[]string{"--", "-host"}, true},
		{[]string{"-s", "4096", "--"}, false},
		{[]string{"-"}, true},
	} {
		if got := hasArgument(fs, tc.args); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.args, got, tc.want)
		}
	}
}
