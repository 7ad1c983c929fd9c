//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRowsWhileSweeping: a client's -a sweep prints each size's row as
// the size ends, as perftest does, not the whole table at the end: the
// client is stopped (SIGINT) as soon as its first row, 2 bytes', is out,
// and it stops part way through the sweep, with the rows of the sizes
// it measured under one column line. Printed at the end, the first row
// came with all 23. So does --csv, under one header row, and a test of
// several threads, whose rows are their sums. The cases run side by side
// (t.Parallel).
func TestRowsWhileSweeping(t *testing.T) {
	for _, tc := range []struct {
		name, test string
		args       []string
		csv        bool
	}{
		{"write-bw", "write-bw", nil, false},
		{"write-lat", "write-lat", nil, false},
		{"write-bw --csv", "write-bw", []string{"--csv"}, true},
		{"write-bw --threads 2", "write-bw", []string{"--threads", "2", "-q", "2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
			srv, _ := startServer(t, ctx, srvDev, port, tc.test)
			args := append([]string{tc.test, "-d", cliDev, "-p", port, "-a", "-n", "20"}, tc.args...)
			cli, cliOut := start(t, ctx, append(args, addr)...)
			// A size's row: its size and iterations, numbers, first (in
			// the CSV after the test's name).
			rows := func(out string) (n int) {
				for _, l := range strings.Split(out, "\n") {
					f := strings.Fields(l)
					if tc.csv {
						f = strings.Split(l, ",")[1:]
					}
					if len(f) >= 5 && f[0] != "" && strings.Trim(f[0], "0123456789") == "" && strings.Trim(f[1], "0123456789") == "" {
						n++
					}
				}
				return n
			}
			stopped := false
			for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && cli.ProcessState == nil; time.Sleep(time.Millisecond) {
				if rows(cliOut.String()) > 0 {
					cli.Process.Signal(syscall.SIGINT)
					stopped = true
					break
				}
			}
			if !stopped {
				t.Fatalf("no row in 60 s:\n%s", cliOut)
			}
			err := cli.Wait()
			// The results table: a test of several threads has each
			// thread's part after it, a table of its own.
			out, _, _ := strings.Cut(cliOut.String(), " Each thread's part")
			if n := rows(out); n == 0 || n >= 23 || procExit(err) != 130 {
				t.Errorf("stopped at its first row: %v, %d rows of the sweep's 23:\n%s", err, n, out)
			} else {
				t.Logf("stopped at its first row: %d rows of the sweep's 23", n)
			}
			columns, first := "#bytes", "\n 2 "
			if tc.csv {
				columns, first = "test,bytes,", "\nwrite_bw,2,"
			}
			if n := strings.Count(out, columns); n != 1 {
				t.Errorf("%d column lines:\n%s", n, out)
			}
			if i := strings.Index(out, first); i < strings.Index(out, columns) {
				t.Errorf("the first row is not the 2 bytes' after the column line:\n%s", out)
			}
			srv.Wait()
		})
	}
}

// TestInfiniteServerOneColumnLine: the server of a client's
// --run_infinitely write test, which sees none of the client's writes
// and reports no intervals, prints the table's column line once, above
// the result's row, not once after its header and again at the end.
// The client is stopped once it has printed its first interval's row
// (where the test slept 3.5 s).
func TestInfiniteServerOneColumnLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, srvOut, cli, cliOut := writeBWPair(t, ctx, "-s", "4096", "--run_infinitely", "-D", "1")
	waitOutput(t, srvOut, "GID index")
	interval := func() bool {
		for _, l := range strings.Split(cliOut.String(), "\n") {
			if f := strings.Fields(l); len(f) == 5 && f[0] == "4096" {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(30 * time.Second); !interval(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the client printed no interval in 30 s:\n%s", cliOut)
		}
	}
	cli.Process.Signal(syscall.SIGINT)
	cli.Wait()
	err := srv.Wait()
	out := srvOut.String()
	cols, row := strings.Index(out, "#bytes"), strings.Index(out, "\n 4096 ")
	if n := strings.Count(out, "#bytes"); err != nil || n != 1 || row < cols {
		t.Errorf("server: %v, %d column lines, the row at %d after them at %d:\n%s\nclient:\n%s", err, n, row, cols, out, cliOut)
	}
}
