//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmamsg"
)

// A server that answers each message with the same bytes, one client at a
// time.
func ExampleListener_Accept() {
	ctx := context.Background()
	l, err := rdmamsg.Listen(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for {
		c, err := l.Accept(ctx)
		if err != nil {
			log.Fatal(err)
		}
		buf := make([]byte, c.MaxRecv())
		for {
			n, err := c.Recv(ctx, buf)
			if err != nil {
				break // io.EOF: the client closed
			}
			if err := c.Send(ctx, buf[:n]); err != nil {
				break
			}
		}
		c.Close()
	}
}

// A client that sends a file as a stream. The stream goes in messages of
// Conn.MaxSend bytes, the server's Config.MaxMessage (up to this side's
// Config.MaxSend); this side's own MaxMessage sizes only its receives, so
// a client that only sends leaves it at the default.
func ExampleConn_Write() {
	ctx := context.Background()
	c, err := rdmamsg.Dial(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("data.bin")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	n, err := io.Copy(c, f)
	if err != nil {
		log.Fatal(err)
	}
	// Close returns once the last message has reached the server.
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "bytes sent")
}

// Two programs that already talk over TCP move their messages to RDMA:
// each side hands its end of the TCP connection to Handshake, here the
// one that accepted it.
func ExampleHandshake() {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "198.18.0.1:7470")
	if err != nil {
		log.Fatal(err)
	}
	nc, err := ln.Accept()
	if err != nil {
		log.Fatal(err)
	}
	c, err := rdmamsg.Handshake(ctx, nc, nil) // the dialer calls it with its end
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // closes nc too
	buf := make([]byte, c.MaxRecv())
	n, err := c.Recv(ctx, buf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s over %s\n", buf[:n], c.QP().PD().Context().Name())
}

// A store that lets its client read a table straight from its memory: the
// server registers the table for remote reads and sends the client where
// it is; the client reads any part of it with ReadRemote, which the
// server's device answers without the server's program.
func ExampleConn_ReadRemote() {
	ctx := context.Background()
	// The server, with a Conn c from Accept:
	serve := func(c *rdmamsg.Conn) {
		table, err := c.RegisterMemory(1<<20, ibverbs.AccessRemoteRead)
		if err != nil {
			log.Fatal(err)
		}
		copy(table.Bytes(), "the values")
		where, err := table.Remote().MarshalBinary()
		if err != nil {
			log.Fatal(err)
		}
		if err := c.Send(ctx, where); err != nil {
			log.Fatal(err)
		}
		// The client reads the table until it closes: only then may the
		// table go.
		c.Recv(ctx, make([]byte, c.MaxRecv()))
		c.Close()
		table.Close()
	}
	_ = serve

	// The client:
	c, err := rdmamsg.Dial(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, c.MaxRecv())
	n, err := c.Recv(ctx, buf)
	if err != nil {
		log.Fatal(err)
	}
	var table ibverbs.RemoteMR
	if err := table.UnmarshalBinary(buf[:n]); err != nil {
		log.Fatal(err)
	}
	local, err := c.RegisterMemory(4096, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	if err := c.ReadRemote(ctx, local, 0, table, 0, 10); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", local.Bytes()[:10])
}

// A server lends its client a page to write into: it registers memory
// with remote write access and sends the client where it is, the
// region's Remote, in a message. The client's writes land there with no
// call of the server's; the message the client sends after them says
// they are done, since a connection delivers in order. The client is the
// Conn.WriteRemote example.
func ExampleConn_RegisterMemory() {
	ctx := context.Background()
	l, err := rdmamsg.Listen(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	c, err := l.Accept(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	page, err := c.RegisterMemory(4096, ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	defer page.Close() // before c.Close, once the client is done with it

	// Where the page is: its address, length and rkey.
	where, err := page.Remote().AppendBinary(nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Send(ctx, where); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, c.MaxRecv())
	n, err := c.Recv(ctx, buf) // "written 5"
	if err != nil {
		log.Fatal(err)
	}
	var k int
	if _, err := fmt.Sscanf(string(buf[:n]), "written %d", &k); err != nil || k > page.Len() {
		log.Fatalf("%q: %v", buf[:n], err)
	}
	fmt.Printf("the client wrote %q\n", page.Bytes()[:k])
	// The client may go on reading the page until it closes.
	if _, err := c.Recv(ctx, buf); err != io.EOF {
		log.Fatal(err)
	}
}

// A client writes into the page its server lent it (the
// Conn.RegisterMemory example) and reads it back: the server's
// ibverbs.RemoteMR comes in a message, and WriteRemote and ReadRemote
// move the bytes between it and a region of the client's with one RDMA
// write or read each, which the server's device serves alone. A message
// sent after WriteRemote returned reaches the server after the bytes.
func ExampleConn_WriteRemote() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rdmamsg.Dial(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, c.MaxRecv())
	n, err := c.Recv(ctx, buf)
	if err != nil {
		log.Fatal(err)
	}
	var page ibverbs.RemoteMR
	if err := page.UnmarshalBinary(buf[:n]); err != nil {
		log.Fatal(err)
	}
	local, err := c.RegisterMemory(4096, 0) // no remote access: for this side's operations only
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close() // before c.Close: no operation on it is left
	k := copy(local.Bytes(), "hello")
	// local's bytes 0 to 5 into the server's page at offset 0.
	if err := c.WriteRemote(ctx, page, 0, local, 0, k); err != nil {
		log.Fatal(err) // EINVAL for a range outside either region
	}
	// And back, into local at offset 2048.
	if err := c.ReadRemote(ctx, local, 2048, page, 0, k); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read back %q\n", local.Bytes()[2048:2048+k])
	if err := c.Send(ctx, fmt.Appendf(nil, "written %d", k)); err != nil {
		log.Fatal(err)
	}
}
