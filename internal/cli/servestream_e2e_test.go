//go:build linux && cgo

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeRowsWhileSweeping: `gorperf serve` prints each size's row of
// a client's -a sweep as the size ends, as a server for one test does,
// not the whole table at the test's end. The client is stopped (SIGINT)
// as soon as the server's first row, 2 bytes', is out, and the server
// has the rows of the sizes measured, fewer than the sweep's 23, each
// once under one column line. Printed at the end, the first row came
// after the client had swept all 23. Three more tests follow on the same
// server: a read_lat sweep, which has its own header and latency
// columns, not the write test's, a write_bw sweep of two threads, whose
// rows are their sums, each of the 23 once (printed as they came and
// not again at the end), and a write_bw sweep that Ctrl-C stops serve
// in, once its first row is out: the rows measured, each once, and
// serve's exit status 0.
func TestServeRowsWhileSweeping(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 240*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve")
	// test is the server's output of its test k (from 0), from its
	// header's first line to the next test's header; its results
	// table, of a test of several threads without each thread's part.
	test := func(k int) string {
		parts := strings.Split(srvOut.String(), "\n Dual-port ")
		if len(parts) < k+2 {
			return ""
		}
		s, _, _ := strings.Cut(parts[k+1], " Each thread's part")
		return s
	}
	// rows returns the sizes of the rows in out, a row a line that
	// starts with a size and its iterations (a passive latency side's,
	// with what it says in their place), and how many times each came.
	rows := func(out string) (sizes []string, times map[string]int) {
		times = map[string]int{}
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) >= 5 && strings.Trim(f[0], "0123456789") == "" && (strings.Trim(f[1], "0123456789") == "" || f[1] == "measured") {
				if times[f[0]] == 0 {
					sizes = append(sizes, f[0])
				}
				times[f[0]]++
			}
		}
		return sizes, times
	}
	// firstRow waits for test k's first row on the server and then
	// sends sig to p.
	firstRow := func(k int, p *os.Process, sig os.Signal) {
		t.Helper()
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if sizes, _ := rows(test(k)); len(sizes) > 0 {
				p.Signal(sig)
				return
			}
		}
		t.Fatalf("no row of the server's test %d in 60 s:\n%s", k, srvOut)
	}
	// check checks test k's table: one column line (with want in it)
	// and the rows, each size once, of all 23 sizes or fewer.
	check := func(k int, want string, all bool) {
		t.Helper()
		out := test(k)
		sizes, times := rows(out)
		n := len(sizes)
		t.Logf("test %d: %d rows of the sweep's 23", k, n)
		if all && n != 23 || !all && (n == 0 || n >= 23) {
			t.Errorf("test %d: %d rows of the sweep's 23:\n%s", k, n, out)
		}
		for _, s := range sizes {
			if times[s] != 1 {
				t.Errorf("test %d: the row of %s bytes %d times:\n%s", k, s, times[s], out)
			}
		}
		cols := strings.Count(out, " #bytes ")
		if cols != 1 || !strings.Contains(out, want) || strings.Index(out, "\n 2 ") < strings.Index(out, " #bytes ") {
			t.Errorf("test %d: %d column lines, want one with %q before the 2 bytes' row:\n%s", k, cols, want, out)
		}
	}
	// client starts a client of an -a sweep of iters messages a size:
	// the sweeps run to their end take the fewest -n takes (5), since
	// each message more lengthens their sizes of megabytes under
	// emulation.
	client := func(iters string, args ...string) (*exec.Cmd, *syncBuffer) {
		return start(t, ctx, append(append([]string{args[0], "-d", cliDev, "-p", port, "-a", "-n", iters}, args[1:]...), addr)...)
	}

	cli, cliOut := client("20", "write-bw")
	firstRow(0, cli.Process, syscall.SIGINT)
	if err := cli.Wait(); procExit(err) != 130 {
		t.Errorf("the client stopped at the server's first row: %v, want exit 130 (stopped part way):\n%s", err, cliOut)
	}
	cli, cliOut = client("5", "read-lat")
	if err := cli.Wait(); err != nil {
		t.Fatalf("read-lat: %v\n%s", err, cliOut)
	}
	cli, cliOut = client("5", "write-bw", "--threads", "2", "-q", "2")
	if err := cli.Wait(); err != nil {
		t.Fatalf("write-bw --threads 2: %v\n%s", err, cliOut)
	}
	cli, cliOut = client("20", "write-bw")
	firstRow(3, srv.Process, syscall.SIGINT)
	err := srv.Wait()
	// The client's run was cut short by the server's stop: exit 1.
	if cerr := cli.Wait(); procExit(cerr) != 1 || !strings.Contains(cli.Stderr.(*bytes.Buffer).String(), "the server was interrupted (Ctrl-C) before the run ended") {
		t.Errorf("the client of the test serve was stopped in: %v, want exit 1 saying why\n%s%s", cerr, cliOut, cli.Stderr)
	}
	e := srv.Stderr.(*bytes.Buffer).String()
	if procExit(err) != 0 || !strings.Contains(e, "served 4 tests, 0 failed") {
		t.Errorf("serve: %v:\n%s", err, e)
	}
	check(0, "BW average", false)
	check(1, "t_typical", true)
	check(2, "BW average", true)
	check(3, "BW average", false)
	if strings.Contains(test(1), "BW average") {
		t.Errorf("the read_lat test has the write_bw test's columns:\n%s", test(1))
	}
}
