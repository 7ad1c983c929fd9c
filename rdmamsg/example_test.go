//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"

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
