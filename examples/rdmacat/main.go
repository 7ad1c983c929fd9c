//go:build linux && cgo

// Command rdmacat copies a byte stream over RDMA, as netcat does over TCP:
// the server receives one stream and writes it out, the client sends its
// input. Under it is package rdmamsg: an RC connection from rdma_cm, with
// the stream cut into messages under credit flow control; with -tcp, a
// connection set up over TCP at the same address instead (rdmamsg's
// Handshake), on the RDMA port with a GID of the TCP connection's address.
//
//	rdmacat -l 198.18.0.1:7472 -o copy.bin   # server: one stream, then exit
//	rdmacat -i data.bin 198.18.0.1:7472      # client
//
// With -tcp the server runs the handshake on each TCP connection as it
// comes, several at a time, as rdmamsg's Listener answers rdma_cm's
// requests: a connection that is not an rdmacat client's, or says nothing
// for 10 s (rdmamsg's Config.HandshakeTimeout), is reported on standard
// error and the server waits on for a client, which neither holds up; the
// client gives up on a server that does not take its TCP connection
// within those 10 s (a port that drops the SYNs, a host that is down),
// and on one that does not then complete the handshake within 10 s more.
//
// Each side reports on standard error what it moved, and how fast. A side
// that fails part way (its input cannot be read, its output cannot be
// written, Ctrl-C, SIGTERM, SIGHUP) aborts the connection (rdmamsg's
// Conn.Abort), and the other then fails too, rather than take what
// arrived for the whole stream: both exit with status 1. So does the
// other side of one that is killed (SIGKILL, the OOM killer): its
// connection ends with no end message, which rdmamsg tells from a Close
// (io.ErrUnexpectedEOF, not io.EOF). The client ends its stream with
// CloseWrite and waits for the server's word before it says "sent": the
// server closes (an end message) once it has written (and synced)
// everything, or aborts. The client watches for that word from the
// start: a server that aborts, is stopped or killed while the client's
// input is idle (a pipe, a terminal, tail -f) fails the client at once,
// not once its input yields more or ends.
//
// -m is the largest message this side receives, 1 KiB to 64 MiB: the
// server's is the size the client cuts the stream into, and each side
// keeps 32 receive buffers of it registered. A value out of that range
// is a usage error (exit status 2), as a flag that is not a number is.
//
// A server's -o FILE that does not exist yet, or is a regular file of
// this user's with no other hard link, is written as a hidden file beside
// it (.FILE.rdmacat-*), with FILE's mode, and renamed over FILE once the
// whole stream is written and synced: a stream that fails leaves no part
// of itself under FILE, and FILE as it was. Until then the disk holds both.
// A symbolic link to such a file keeps its place: the file it names is
// the one replaced, beside it. The server writes FILE itself where it is
// anything else (a device, a pipe, another user's file, which a rename
// would make this user's) or where the hidden file cannot be made (a
// directory this user may not write, a name too long); a FILE it may not
// write fails at once, before it listens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

func main() {
	listen := flag.String("l", "", "serve at this address: receive one stream")
	in := flag.String("i", "", "client: send this file (default: standard input)")
	out := flag.String("o", "", "server: write the stream to this file (default: standard output)")
	size := msgSize(64 << 10)
	flag.Var(&size, "m", fmt.Sprintf("largest message this side receives, in bytes (%d to %d)", minMessage, maxMessage))
	tcp := flag.Bool("tcp", false, "set the connection up over TCP (both sides must say so), not rdma_cm")
	flag.Parse()
	// Go's runtime ends a program on SIGPIPE when a write to standard
	// output (or error) finds a pipe with no reader: the server whose
	// output's reader went away died without a word, and the client took
	// its disconnect for the reason. With SIGPIPE ignored, the write fails
	// (EPIPE) as any other write does: the side aborts, says why, and exits 1.
	signal.Ignore(syscall.SIGPIPE)
	// A side stopped by a signal aborts, so that its peer fails too,
	// rather than take the end of what came for the end of the stream.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cfg := &rdmamsg.Config{MaxMessage: int(size)}
	var err error
	code := 1 // 2 for a usage error, as the flag package's
	switch {
	case *listen != "" && flag.NArg() == 0 && *in == "":
		err = serve(ctx, *listen, *out, cfg, *tcp)
	case *listen == "" && flag.NArg() == 1 && *out == "":
		err = send(ctx, flag.Arg(0), *in, cfg, *tcp)
	default:
		err = errors.New("usage: rdmacat [-tcp] -l ADDR [-o FILE] | rdmacat [-tcp] [-i FILE] ADDR")
		code = 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdmacat:", stopped(ctx, err))
		os.Exit(code)
	}
}

// stopped returns err, saying which signal stopped the program where
// err is the end of ctx that a signal caused and does not say so
// already: a context's own error says only "context canceled"
// (context.Canceled), its cause names the signal (signal.NotifyContext).
func stopped(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (%v)", err, cause)
}

// The range of -m. rdmamsg takes any MaxMessage from 1 byte, and 0 for
// its default (4096): a stream cut into messages of a few bytes crawls,
// each message costing a credit and a completion, and one of a gigabyte
// registers 32 times that.
const (
	minMessage = 1 << 10
	maxMessage = 64 << 20
)

// msgSize is -m's value, which Set holds to minMessage to maxMessage.
type msgSize int

func (m *msgSize) String() string { return strconv.Itoa(int(*m)) }

func (m *msgSize) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("not a whole number of bytes")
	}
	if v < minMessage || v > maxMessage {
		return fmt.Errorf("want %d to %d bytes", minMessage, maxMessage)
	}
	*m = msgSize(v)
	return nil
}

// serve receives one stream at addr and writes it to the file out, or to
// standard output. It opens out before it listens, so that a file it
// cannot write fails before a client has sent it anything.
func serve(ctx context.Context, addr, out string, cfg *rdmamsg.Config, tcp bool) error {
	w := os.Stdout
	var o *output
	if out != "" {
		var err error
		if o, err = create(out); err != nil {
			return err
		}
		defer o.discard() // after a failure; a no-op once kept
		w = o.File
	}
	c, err := accept(ctx, addr, cfg, tcp)
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := copyUntil(ctx, c, w, c, nil)
	if err != nil {
		c.Abort()
		return fmt.Errorf("receiving from %s: %w", c.RemoteAddr(), err)
	}
	if err := flush(w, out != ""); err != nil {
		c.Abort()
		return fmt.Errorf("receiving from %s: %w", c.RemoteAddr(), err)
	}
	if o != nil {
		if err := o.keep(); err != nil {
			c.Abort()
			return fmt.Errorf("receiving from %s: %w", c.RemoteAddr(), err)
		}
	}
	// The client waits for this Close, whose end message is the word
	// that all it sent is written: the client of a server that was
	// killed reads no end message, and fails.
	if err := c.Close(); err != nil {
		return err
	}
	report("received", n, "from", c.RemoteAddr().String(), start)
	return nil
}

// output is the server's -o file: the hidden file that the stream is
// written to, renamed over dest at the end, or the file itself (then Name
// is its name).
type output struct {
	*os.File
	temp bool   // a hidden file, removed unless kept
	dest string // what a hidden file replaces
}

// create opens the file that the stream to out is written to (see the
// package's documentation): a hidden file beside the regular file that
// out names, through a symbolic link too, or beside out where nothing is
// there yet, with the file's mode or a new file's (0666 less the umask,
// as os.Create gives); else out itself, truncated, as os.Create does.
func create(out string) (*output, error) {
	inPlace := func() (*output, error) {
		f, err := os.Create(out)
		return &output{File: f}, err
	}
	dest, mode := out, fs.FileMode(0o666)&^umask
	switch fi, err := os.Stat(out); {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Lstat(out); err == nil {
			return inPlace() // a link to nothing: os.Create makes what it names
		}
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return inPlace() // /dev/null, a pipe
	default:
		// Refused at once, as os.Create refuses it, where this user may
		// not write it: a rename would replace it all the same.
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		f.Close()
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() || st.Nlink > 1 {
			return inPlace() // another's file, or one with other links
		}
		if dest, err = filepath.EvalSymlinks(out); err != nil {
			return nil, err
		}
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".rdmacat-*")
	if err != nil {
		return inPlace() // no room beside it: its own open says why it fails, if it does
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &output{File: f, temp: true, dest: dest}, nil
}

// keep renames o, synced and closed, over its file where it is a hidden
// file, and syncs the directory: the file becomes the whole stream, on
// storage, before the Close that tells the client so.
func (o *output) keep() error {
	if !o.temp {
		return nil
	}
	if err := os.Rename(o.Name(), o.dest); err != nil {
		return err
	}
	o.temp = false
	d, err := os.Open(filepath.Dir(o.dest))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err // EINVAL: a file system whose directories are not synced
	}
	return nil
}

// discard closes o, and removes it where it is a hidden file not kept.
func (o *output) discard() {
	o.Close() // a no-op error once closed
	if o.temp {
		os.Remove(o.Name())
	}
}

// umask is the process's file mode creation mask, read once at start.
var umask = func() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}()

// flush commits what was written to w to its storage, where w is a
// regular file: a device (/dev/null), a pipe or a terminal has none, and
// its Sync fails (EINVAL). It closes w if close says so.
func flush(w *os.File, close bool) error {
	fi, err := w.Stat()
	if err == nil && fi.Mode().IsRegular() {
		err = w.Sync()
	}
	if close {
		err = errors.Join(err, w.Close())
	}
	return err
}

// accept takes one connection at addr, through rdma_cm or over TCP.
func accept(ctx context.Context, addr string, cfg *rdmamsg.Config, tcp bool) (*rdmamsg.Conn, error) {
	if !tcp {
		l, err := rdmamsg.Listen(ctx, addr, cfg)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		fmt.Fprintln(os.Stderr, "listening on", l.Addr())
		c, err := l.Accept(ctx)
		if err != nil && ctx.Err() != nil {
			return nil, context.Cause(ctx) // the signal that stopped the wait
		}
		return c, err
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	fmt.Fprintln(os.Stderr, "listening on", ln.Addr(), "(tcp)")
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	return handshakeFirst(ctx, ln, cfg)
}

// maxHandshakes bounds the -tcp server's handshakes under way; the
// connections beyond them wait in the kernel's backlog.
const maxHandshakes = 8

// handshakeFirst accepts connections on ln and runs rdmamsg's Handshake
// on each as it comes, up to maxHandshakes at a time, until one succeeds,
// which it returns, as rdmamsg's Listener answers rdma_cm's requests: a
// connection that fails its handshake (not an rdmamsg peer, one that went
// away) is reported on standard error, and one that says nothing is
// dropped after Config.HandshakeTimeout (10 s), neither holding up the
// client behind it. Only ln's failure (Ctrl-C closes it) ends the wait.
// The handshakes under way when one succeeds end with it.
func handshakeFirst(ctx context.Context, ln net.Listener, cfg *rdmamsg.Config) (*rdmamsg.Conn, error) {
	type result struct {
		c   *rdmamsg.Conn
		err error
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result)
	failed := make(chan error, 1)
	slots := make(chan struct{}, maxHandshakes)
	go func() {
		for {
			select {
			case slots <- struct{}{}:
			case <-hctx.Done():
				return
			}
			nc, err := ln.Accept()
			if err != nil {
				failed <- err
				return
			}
			go func() {
				c, err := rdmamsg.Handshake(hctx, nc, cfg)
				<-slots
				select {
				case results <- result{c, err}:
				case <-hctx.Done():
					if c != nil {
						c.Abort() // another won: this one's peer fails at once
					}
				}
			}()
		}
	}()
	for {
		select {
		case err := <-failed:
			if ctx.Err() != nil {
				return nil, context.Cause(ctx) // the signal that stopped the wait
			}
			return nil, err
		case r := <-results:
			if r.err == nil {
				return r.c, nil
			}
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			fmt.Fprintf(os.Stderr, "rdmacat: %v; still listening\n", r.err)
		}
	}
}

// dialTimeout bounds a -tcp client's wait for its TCP connection, as
// Config.HandshakeTimeout (10 s) bounds the handshake after it, where
// the kernel's SYN retries would take over two minutes.
const dialTimeout = 10 * time.Second

// dial connects to addr, through rdma_cm or over TCP, where Handshake
// bounds its wait for the server by Config.HandshakeTimeout (ctx, the
// signals', has no deadline).
func dial(ctx context.Context, addr string, cfg *rdmamsg.Config, tcp bool) (*rdmamsg.Conn, error) {
	if !tcp {
		return rdmamsg.Dial(ctx, addr, cfg)
	}
	nc, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", addr)
	if ne, ok := err.(net.Error); ok && ne.Timeout() && ctx.Err() == nil {
		return nil, fmt.Errorf("no TCP connection within %v: %w", dialTimeout, err)
	}
	if err != nil {
		return nil, err
	}
	return rdmamsg.Handshake(ctx, nc, cfg)
}

func send(ctx context.Context, addr, in string, cfg *rdmamsg.Config, tcp bool) error {
	r := os.Stdin
	if in != "" {
		var err error
		if r, err = os.Open(in); err != nil {
			return err
		}
		defer r.Close()
	}
	c, err := dial(ctx, addr, cfg, tcp)
	if err != nil {
		return err
	}
	start := time.Now()
	word := watch(ctx, c)
	n, err := copyUntil(ctx, c, c, r, word)
	if err == nil {
		err = ended(ctx, c, word)
	}
	if err != nil {
		c.Abort()
		return fmt.Errorf("sending to %s: %w", addr, err)
	}
	// Close returns at once: the server has closed.
	if err := c.Close(); err != nil {
		return err
	}
	report("sent", n, "to", addr, start)
	return nil
}

// watch waits, from the client's start, for the server's word, and
// sends it on the channel it returns: the server sends no data, so what
// its side yields is its end. That is its Close once it has written
// everything, whose end message this side reads as io.EOF; its Abort
// when it could not, or was stopped (an error matching ECONNRESET); or
// its disconnect with no end message, when it was killed
// (io.ErrUnexpectedEOF); or ctx's error. Any of them before the client
// has ended its stream is a failure (copyUntil); after, io.EOF is
// success (ended).
func watch(ctx context.Context, c *rdmamsg.Conn) <-chan error {
	word := make(chan error, 1)
	go func() {
		var b [1]byte
		n, err := c.Recv(ctx, b[:])
		if err == nil {
			err = fmt.Errorf("the server sent %d bytes, where it sends nothing", n)
		}
		word <- err
	}()
	return word
}

// ended ends the client's stream (CloseWrite, which does not wait for
// the server to read) and waits for the server's word (see watch), or
// ctx's end. An older server, whose rdmamsg takes no CloseWrite, learns
// of the end from the client's Close, and says nothing.
func ended(ctx context.Context, c *rdmamsg.Conn, word <-chan error) error {
	select {
	case err := <-word: // came with the last of the copy
		return early(ctx, err)
	default:
	}
	err := c.CloseWrite()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	switch err := <-word; {
	case err == io.EOF:
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	default:
		return fmt.Errorf("the server's end: %w", err)
	}
}

// early is the client's error for the server's word that came before the
// client ended its stream: even an end message (io.EOF) is then no word
// that the stream was written.
func early(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err == io.EOF {
		return errors.New("the server closed the connection before the end of the stream")
	}
	return fmt.Errorf("the server's end, before the stream's: %w", err)
}

// copyUntil copies from r to w until r ends, or fails (the error says
// after how many bytes), or ctx ends (Ctrl-C), or word, where it is not
// nil, brings the peer's end (see watch). Then it aborts c, so that the
// peer fails too, and returns without waiting for the copy, which may be
// blocked in r (a terminal, a pipe): the connection's Abort does not
// wait for it, and neither does the process.
func copyUntil(ctx context.Context, c *rdmamsg.Conn, w io.Writer, r io.Reader, word <-chan error) (int64, error) {
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := io.Copy(w, r)
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return res.n, fmt.Errorf("after %d bytes: %w", res.n, res.err)
		}
		return res.n, nil
	case err := <-word:
		c.Abort()
		return 0, early(ctx, err)
	case <-ctx.Done():
		c.Abort()
		return 0, context.Cause(ctx)
	}
}

func report(verb string, n int64, prep, peer string, start time.Time) {
	d := time.Since(start)
	fmt.Fprintf(os.Stderr, "%s %d bytes %s %s in %v (%.2f MB/s)\n", verb, n, prep, peer,
		d.Round(time.Microsecond), float64(n)/d.Seconds()/1e6)
}
