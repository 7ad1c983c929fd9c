//go:build linux && cgo

package cli

// #include <errno.h>
// #include <fcntl.h>
//
// // gorperf_stdout_closed is 1 where the process started with file
// // descriptor 1 closed, 0 where it was open, and -1 where the check did
// // not run (a binary linked without the C start-up, which does not run
// // C constructors: -linkmode=internal).
// static int gorperf_stdout_closed = -1;
//
// // Run by the C start-up before Go's runtime, which puts /dev/null on a
// // standard descriptor that it finds closed (runtime.checkfds), after
// // which a closed stdout cannot be told from /dev/null.
// __attribute__((constructor)) static void gorperf_check_stdout(void) {
// 	gorperf_stdout_closed = fcntl(1, F_GETFD) < 0 && errno == EBADF;
// }
//
// static int gorperf_stdout_was_closed(void) { return gorperf_stdout_closed == 1; }
import "C"

// stdoutClosedAtStart reports whether gorperf started with its standard
// output closed (gorperf ... >&-). Go's runtime opens /dev/null in its
// place before any Go code runs, so writes to os.Stdout then succeed and
// the output is lost; a C constructor looks before it does.
func stdoutClosedAtStart() bool { return C.gorperf_stdout_was_closed() != 0 }
