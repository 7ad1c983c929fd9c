//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"

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
