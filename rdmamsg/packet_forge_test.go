//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// forger is a bare UD QP, no PacketConn: it looks a PacketConn up as
// anyone may and sends it datagrams whose header claims any port.
type forger struct {
	ud       *rdmacm.UDParam // the PacketConn's, from the lookup
	pd       *ibverbs.PD
	scq, rcq *ibverbs.CQ
	qp       *ibverbs.QP
	mr       *ibverbs.MR
	ah       *ibverbs.AH
	wcs      []ibverbs.WC
}

const (
	forgerRecvs = 8
	forgerSlot  = ibverbs.GRHLen + 4096
)

// newForger makes a forger on the device dev, at its address from, aimed
// at the PacketConn at to; it is freed when the test ends.
func newForger(t *testing.T, dev string, from netip.Addr, to netip.AddrPort) *forger {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f := &forger{wcs: make([]ibverbs.WC, forgerRecvs)}
	var err error
	f.ud, err = rdmacm.LookupUD(timeout(t, 20*time.Second), to.String(), &rdmacm.Config{SrcAddr: from.String()})
	must(err)
	ctx, err := ibverbs.Open(dev)
	must(err)
	t.Cleanup(func() { closeOK(t, ctx) })
	f.pd, err = ctx.AllocPD()
	must(err)
	t.Cleanup(func() { closeOK(t, f.pd) })
	f.scq, err = ctx.CreateCQ(forgerRecvs, nil)
	must(err)
	t.Cleanup(func() { closeOK(t, f.scq) })
	f.rcq, err = ctx.CreateCQ(forgerRecvs, nil)
	must(err)
	t.Cleanup(func() { closeOK(t, f.rcq) })
	f.qp, err = f.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeUD, SendCQ: f.scq, RecvCQ: f.rcq,
		Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: forgerRecvs, MaxSendSGE: 1, MaxRecvSGE: 1}})
	must(err)
	t.Cleanup(func() { closeOK(t, f.qp) })
	must(f.qp.Connect(ibverbs.Endpoint{}, ibverbs.ConnParams{Port: 1, QKey: rdmacm.UDPQKey}))
	buf, err := ibverbs.NewBuffer((forgerRecvs+1)*forgerSlot, ibverbs.BufferOptions{})
	must(err)
	t.Cleanup(func() { closeOK(t, buf) })
	f.mr, err = f.pd.RegMR(buf, ibverbs.AccessLocalWrite)
	must(err)
	t.Cleanup(func() { closeOK(t, f.mr) })
	for i := range forgerRecvs {
		must(f.qp.PostRecv([]ibverbs.RecvWR{{ID: uint64(i), SGL: []ibverbs.SGE{f.mr.SGE(i*forgerSlot, forgerSlot)}}}))
	}
	f.ah, err = f.pd.CreateAH(f.ud.AHAttr)
	must(err)
	t.Cleanup(func() { closeOK(t, f.ah) })
	return f
}

// send sends payload in a PacketConn datagram whose header claims port
// and maxData, and waits for its completion.
func (f *forger) send(t *testing.T, port uint16, maxData uint32, payload []byte) {
	t.Helper()
	m := make([]byte, 8+len(payload))
	m[0], m[1] = 'G', 1
	binary.BigEndian.PutUint16(m[2:], port)
	binary.BigEndian.PutUint32(m[4:], maxData)
	copy(m[8:], payload)
	f.sendRaw(t, m)
}

// sendRaw sends m, header and all, as one datagram, and waits for its
// completion.
func (f *forger) sendRaw(t *testing.T, m []byte) {
	t.Helper()
	off := forgerRecvs * forgerSlot
	n := copy(f.mr.Buffer().Bytes()[off:], m)
	err := f.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{f.mr.SGE(off, n)}, AH: f.ah, RemoteQPN: f.ud.QPNum, RemoteQKey: f.ud.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Microsecond) {
		k, err := f.scq.Poll(f.wcs[:1])
		if err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			if err := f.wcs[0].Err(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("the forger's send did not complete")
}

// received returns the payloads of the datagrams that came to the forger
// within d.
func (f *forger) received(t *testing.T, d time.Duration) []string {
	t.Helper()
	var got []string
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		k, err := f.rcq.Poll(f.wcs)
		if err != nil {
			t.Fatal(err)
		}
		for _, wc := range f.wcs[:k] {
			i := int(wc.WRID)
			b := f.mr.Buffer().Bytes()[i*forgerSlot : i*forgerSlot+int(wc.ByteLen)]
			got = append(got, string(b[min(len(b), ibverbs.GRHLen+8):]))
			if err := f.qp.PostRecv([]ibverbs.RecvWR{{ID: uint64(i), SGL: []ibverbs.SGE{f.mr.SGE(i*forgerSlot, forgerSlot)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// TestPacketForgedSender: a bare UD QP on the client's IP address (the
// VM's other device) claims the client's port, with the server's QP
// number from a lookup and the well-known Q_Key, and a largest datagram
// of its own. The server takes its datagrams for the client's (the port
// is not authenticated), but its answers to the client's address still
// reach the client, not the forger, whole, whatever largest datagram the
// forger claimed; and an answer to a port the forger claims but nothing
// listens at fails, rather than go to the forger. (Before, a datagram
// from a known address but another QP repointed it: the answers went to
// the forger, and a claimed largest datagram of 1 made them fail.)
func TestPacketForgedSender(t *testing.T) {
	s, c := packetPair(t)
	_, cli := ends(t)
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, s.MaxDatagram())
	exchange := func(what string, m []byte) {
		t.Helper()
		if err := s.WriteTo(ctx, m, c.LocalAddr()); err != nil {
			t.Errorf("%s: the server's answer to the client: %v", what, err)
			return
		}
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		n, from, err := c.ReadFrom(short, buf)
		if err != nil || from != s.LocalAddr() || !bytes.Equal(buf[:n], m) {
			t.Errorf("%s: the client got %q from %v, %v; want %q from %v", what, buf[:n], from, err, m, s.LocalAddr())
		}
	}
	if err := c.WriteTo(ctx, []byte("GET k"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if n, from, err := s.ReadFrom(ctx, buf); err != nil || from != c.LocalAddr() || string(buf[:n]) != "GET k" {
		t.Fatalf("the server got %q from %v, %v", buf[:n], from, err)
	}
	exchange("before the forger", []byte("VALUE 1"))

	f := newForger(t, cli.Dev, cli.IP, s.LocalAddr())
	answer := []byte("SECRET VALUE for the client, longer than a byte")
	for _, maxData := range []uint32{uint32(s.MaxDatagram()), 1} {
		f.send(t, c.LocalAddr().Port(), maxData, []byte("PUT k=evil"))
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		n, from, err := s.ReadFrom(short, buf)
		cancel()
		if err != nil || string(buf[:n]) != "PUT k=evil" {
			t.Fatalf("the forger's datagram: %q from %v, %v", buf[:n], from, err)
		}
		t.Logf("the forger's datagram (largest datagram %d) reads as from %v (the client is %v)", maxData, from, c.LocalAddr())
		exchange(fmt.Sprintf("after the forger's datagram claiming a largest datagram of %d", maxData), answer)
		if got := f.received(t, 500*time.Millisecond); len(got) > 0 {
			t.Errorf("the forger, claiming the client's port with largest datagram %d, received %q", maxData, got)
		}
	}

	// A port that no PacketConn has on the client's address: the answer
	// fails its lookup rather than go to the forger who claimed it.
	const unowned = 53
	f.send(t, unowned, uint32(s.MaxDatagram()), []byte("hello from :53"))
	n, from, err := s.ReadFrom(ctx, buf)
	if err != nil || from != netip.AddrPortFrom(cli.IP, unowned) {
		t.Fatalf("the forger's datagram: %q from %v, %v", buf[:n], from, err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = s.WriteTo(short, []byte("answer to :53"), from)
	cancel()
	if err == nil {
		t.Errorf("an answer to %v, a port the forger claimed and nothing listens at, was sent", from)
	} else {
		t.Logf("the answer to %v: %v", from, err)
	}
	if got := f.received(t, 500*time.Millisecond); len(got) > 0 {
		t.Errorf("the forger, claiming port %d, received %q", unowned, got)
	}
	// The client still reaches the server, and is answered.
	if err := c.WriteTo(ctx, []byte("GET k"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if n, from, err := s.ReadFrom(ctx, buf); err != nil || from != c.LocalAddr() {
		t.Fatalf("the server got %q from %v, %v", buf[:n], from, err)
	}
	exchange("at the end", []byte("VALUE 2"))
}
