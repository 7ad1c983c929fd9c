//go:build linux && cgo

package rdmamsg_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// BenchmarkRoundTrip sends a 64-byte message and its answer: two Sends
// and two Recvs an operation, through both connections' goroutines.
// With Spin, each caller polls for the answer before it sleeps.
func BenchmarkRoundTrip(b *testing.B) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		name := "sleep"
		if spin > 0 {
			name = fmt.Sprintf("spin %v", spin)
		}
		b.Run(name, func(b *testing.B) { benchmarkRoundTrip(b, spin) })
	}
}

func benchmarkRoundTrip(b *testing.B, spin time.Duration) {
	cfg := &rdmamsg.Config{Spin: spin}
	srv, cli := connect(b, cfg, cfg)
	ctx := timeout(b, time.Hour)
	msg, buf := make([]byte, 64), make([]byte, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sbuf := make([]byte, 4096)
		for range b.N {
			n, err := srv.Recv(ctx, sbuf)
			if err != nil {
				b.Error(err)
				return
			}
			if err := srv.Send(ctx, sbuf[:n]); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := cli.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.Recv(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}

// BenchmarkStream sends 4 KiB messages one way as fast as the receiver
// takes them, with the default depth and send buffers.
func BenchmarkStream(b *testing.B) {
	srv, cli := connect(b, nil, nil)
	ctx := timeout(b, time.Hour)
	msg := make([]byte, 4096)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for range b.N {
			if _, err := srv.Recv(ctx, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for range b.N {
		if err := cli.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPacketRoundTrip sends a 64-byte datagram and its answer between
// two PacketConns that know each other.
func BenchmarkPacketRoundTrip(b *testing.B) {
	p, q := packetPair(b)
	ctx := timeout(b, time.Hour)
	msg, buf := make([]byte, 64), make([]byte, p.MaxDatagram())
	if err := q.WriteTo(ctx, msg, p.LocalAddr()); err != nil {
		b.Fatal(err)
	}
	_, from, err := p.ReadFrom(ctx, buf)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := p.WriteTo(ctx, msg, from); err != nil {
			b.Fatal(err)
		}
		if _, _, err := q.ReadFrom(ctx, buf); err != nil {
			b.Fatal(err)
		}
		if err := q.WriteTo(ctx, msg, p.LocalAddr()); err != nil {
			b.Fatal(err)
		}
		if _, _, err := p.ReadFrom(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
}
