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
// the client asked for and that its own is not used; nothing for a flag
// it was not given, one whose value is the client's, or one of its own
// side (-d, -p, --report_gbits).
func TestUnusedFlags(t *testing.T) {
	parse := func(test exchange.Test, args []string) (exchange.TestSpec, *pflag.FlagSet) {
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
		return spec, cmd.Flags()
	}
	const unused = " is not used (the client's flags set the test)"
	for _, tc := range []struct {
		test           exchange.Test
		server, client string
		want           []string
	}{
		{exchange.WriteBW, "-d rxe0 -b -q 4 --report_gbits", "198.18.0.1", []string{
			"the client asked for -q 1; this server's -q 4",
			"the client did not ask for -b; this server's -b",
		}},
		{exchange.WriteBW, "-D 5 -c UC -s 4096", "-n 100 198.18.0.1", []string{
			"the client asked for -s 65536; this server's -s 4096",
			"the client did not ask for -D; this server's -D 5",
			"the client asked for -c RC; this server's -c UC",
		}},
		{exchange.SendBW, "-s 4096 -n 100 --tos 32 -a=false", "-s 4096 -a -D 2 198.18.0.1", []string{
			"the client asked for all sizes (-a); this server's -s 4096",
			"the client asked for -a; this server's -a=false",
			"the client asked for a timed run (-D, --run_infinitely); this server's -n 100",
			"the client did not ask for -T; this server's -T 32",
		}},
		{exchange.WriteBW, "-q 2 -s 4096 -b --tclass 32", "-q 2 -s 4096 -b -T 32 198.18.0.1", nil},
		{exchange.ReadBW, "-d rxe0 -p 18516 --report_gbits", "-b -q 8 -s 64 198.18.0.1", nil},
	} {
		own, fs := parse(tc.test, strings.Fields(tc.server))
		client, _ := parse(tc.test, strings.Fields(tc.client))
		got := unusedFlags(fs, own, client)
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
		"gorperf: the client asked for -q 1; this server's -q 4 is not used (the client's flags set the test)\n",
		"gorperf: the client did not ask for -b; this server's -b is not used (the client's flags set the test)\n",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("the server's stderr has no %q:\n%s", want, e)
		}
	}
	if strings.Contains(e, "-s ") || strings.Contains(e, "-d ") {
		t.Errorf("the server mentions a flag that was used:\n%s", e)
	}
}
