//go:build linux && cgo

package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestUnusedFlags: a server for one test given test flags that its client
// sets says, for each one whose value is not the client's test's, what
// the client's test has and that its own is not used, as it was typed,
// not as the defaults rewrote it (-f without -D, -Q over -t); nothing for
// a flag it was not given, one whose value is the client's, or one of
// its own side (-d, -p, --report_gbits). It does not say that the client
// asked for a value that is a default or follows from its other flags
// (-t from -n, -Q from -l, -f from -D), or for the 5 s interval of
// --run_infinitely.
func TestUnusedFlags(t *testing.T) {
	parse := func(test exchange.Test, args []string) (exchange.TestSpec, *pflag.FlagSet, map[string]string) {
		t.Helper()
		var o *testOptions
		cmd := newCmdTest(nil, test, false, func(opts *testOptions) error { o = opts; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		spec, err := o.spec()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return spec, cmd.Flags(), o.typed
	}
	const unused = " is not used (the client's flags set the test)"
	for _, tc := range []struct {
		test           exchange.Test
		server, client string
		want           []string
	}{
		{exchange.WriteBW, "-d rxe0 -b -q 4 --report_gbits", "198.18.0.1", []string{
			"the client's test has -q 1; this server's -q 4",
			"the client's test has no -b; this server's -b",
		}},
		{exchange.WriteBW, "-D 5 -c UC -s 4096", "-n 100 198.18.0.1", []string{
			"the client's test has -s 65536; this server's -s 4096",
			"the client's test has no -D; this server's -D 5",
			"the client's test has -c RC; this server's -c UC",
		}},
		{exchange.SendBW, "-s 4096 -n 100 --tos 32 -a=false", "-s 4096 -a -D 2 198.18.0.1", []string{
			"the client's test runs all sizes (-a); this server's -s 4096",
			"the client's test has -a; this server's -a=false",
			"the client's test is a timed run (-D 2); this server's -n 100",
			"the client's test has no -T; this server's -T 32",
		}},
		{exchange.WriteBW, "-q 2 -s 4096 -b --tclass 32", "-q 2 -s 4096 -b -T 32 198.18.0.1", nil},
		{exchange.ReadBW, "-d rxe0 -p 18516 --report_gbits", "-b -q 8 -s 64 198.18.0.1", nil},

		// As typed: -f 1 without -D is 0 to the defaults, -Q 200 is
		// 128 (-t's); -c as given. (The client's 64 KiB messages have a
		// completion each: -Q 1.)
		{exchange.WriteBW, "-f 1", "-D 8 198.18.0.1", []string{
			"the client's test has -f 2; this server's -f 1",
		}},
		{exchange.WriteBW, "-Q 200 -c uc", "198.18.0.1", []string{
			"the client's test has -c RC; this server's -c uc",
			"the client's test has -Q 1; this server's -Q 200",
		}},
		// What the client's test has, not what it asked for: its -D
		// of --run_infinitely, and values that follow from its others.
		{exchange.WriteBW, "-D 10", "--run_infinitely 198.18.0.1", []string{
			"the client's test runs --run_infinitely, a report every 5 s; this server's -D 10",
		}},
		{exchange.WriteBW, "-D 10 -f 1", "--run_infinitely -D 10 198.18.0.1", []string{
			"the client's test runs --run_infinitely, a report every 10 s; this server's -D 10",
			"the client's test runs --run_infinitely, which has no margin; this server's -f 1",
		}},
		{exchange.WriteBW, "-t 64 -Q 8", "-n 100 -l 4 198.18.0.1", []string{
			"the client's test has -t 100; this server's -t 64",
			"the client's test has -Q 4; this server's -Q 8",
		}},
		{exchange.WriteBW, "-n 100 -f 3", "-D 8 198.18.0.1", []string{
			"the client's test is a timed run (-D 8); this server's -n 100",
			"the client's test has -f 2; this server's -f 3",
		}},
	} {
		own, fs, typed := parse(tc.test, strings.Fields(tc.server))
		client, _, _ := parse(tc.test, strings.Fields(tc.client))
		got := unusedFlags(fs, typed, own, client)
		var want []string
		for _, w := range tc.want {
			want = append(want, w+unused)
		}
		if !slices.Equal(got, want) {
			t.Errorf("server %q, client %q:\n got %q\nwant %q", tc.server, tc.client, got, want)
		}
	}
}

// TestServerFlagsNotUsedOnDevice: a server for one test given -b and
// -q 4, which its client's test sets, says that its flags are not used
// when the client's one-way test of one QP arrives, where it ran that
// test without a word; -s, the same as the client's, and -d, its own,
// are not mentioned.
func TestServerFlagsNotUsedOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 60*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "-b", "-q", "4", "-s", "4096")
	out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "100", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s%s", err, srvOut, srv.Stderr)
	}
	e := srv.Stderr.(*bytes.Buffer).String()
	for _, want := range []string{
		"gorperf: the client's test has -q 1; this server's -q 4 is not used (the client's flags set the test)\n",
		"gorperf: the client's test has no -b; this server's -b is not used (the client's flags set the test)\n",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("the server's stderr has no %q:\n%s", want, e)
		}
	}
	if strings.Contains(e, "-s ") || strings.Contains(e, "-d ") {
		t.Errorf("the server mentions a flag that was used:\n%s", e)
	}
}
