//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestNetConnSuite runs golang.org/x/net/nettest's conformance tests of a
// net.Conn over NetConn: over Conns that Dial and Accept make, and over
// Conns that Handshake makes. Each of its eleven tests makes a connection
// of its own; the largest moves 1 MiB in messages of 1 KiB.
func TestNetConnSuite(t *testing.T) {
	srvNet, cliNet := ends(t)
	t.Run("Dial", func(t *testing.T) {
		nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
			if err != nil {
				return nil, nil, nil, err
			}
			defer l.Close()
			acc := make(chan error, 1)
			var srv *rdmamsg.Conn
			go func() {
				var err error
				srv, err = l.Accept(ctx)
				acc <- err
			}()
			cli, err := rdmamsg.Dial(ctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
			aerr := <-acc
			if err != nil || aerr != nil {
				for _, c := range []*rdmamsg.Conn{cli, srv} {
					if c != nil {
						c.Close()
					}
				}
				return nil, nil, nil, errors.Join(err, aerr)
			}
			return cli.NetConn(), srv.NetConn(), func() { cli.Close(); srv.Close() }, nil
		})
	})
	t.Run("Handshake", func(t *testing.T) {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(srvNet.IP, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type res struct {
				c   *rdmamsg.Conn
				err error
			}
			acc := make(chan res, 1)
			ln.(*net.TCPListener).SetDeadline(time.Now().Add(60 * time.Second))
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					acc <- res{nil, err}
					return
				}
				c, err := rdmamsg.Handshake(ctx, nc, nil)
				acc <- res{c, err}
			}()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: cliNet.IP.AsSlice()}}
			nc, err := d.DialContext(ctx, "tcp", ln.Addr().String())
			var cli *rdmamsg.Conn
			if err == nil {
				cli, err = rdmamsg.Handshake(ctx, nc, nil)
			}
			a := <-acc
			if err != nil || a.err != nil {
				for _, c := range []*rdmamsg.Conn{cli, a.c} {
					if c != nil {
						c.Close()
					}
				}
				return nil, nil, nil, errors.Join(err, a.err)
			}
			return cli.NetConn(), a.c.NetConn(), func() { cli.Close(); a.c.Close() }, nil
		})
	})
}
