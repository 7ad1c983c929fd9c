//go:build linux && cgo

package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestPeerWordSameCheck: where the peer's Error is the same check's
// failure as this side's (both sides find incompatible GIDs, or a UD
// size over the path MTU, in what they swapped), a side says it once,
// in its own words: it printed the peer's copy, cut to MaxString bytes
// and from the peer's point of view ("this side's is index 0" on the
// side of index 1), then "this side then found:" and its own. Other
// words of the peer still come first, said to be the peer's: "the
// server said: ...".
func TestPeerWordSameCheck(t *testing.T) {
	gid, ep := mustGID, gidEndpoint
	v6 := ibverbs.GIDEntry{Index: 0, GID: gid("fe80::1"), Type: ibverbs.GIDTypeRoCEv2}
	v4 := ibverbs.GIDEntry{Index: 1, GID: gid("::ffff:198.18.0.2"), Type: ibverbs.GIDTypeRoCEv2}
	serverErr, clientErr := gidMismatch(v6, ep(v4)), gidMismatch(v4, ep(v6))
	_, udErr := udSizes(exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 4096}, ibverbs.MTU1024)
	// wire is what a side gets of the peer's error: an ErrorMsg's code
	// and its text, cut to MaxString bytes.
	wire := func(err error) error {
		b, err := exchange.AppendFrame(nil, exchange.NewErrorMsg(err))
		if err != nil {
			t.Fatal(err)
		}
		m, err := exchange.DecodeFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		e := m.(exchange.ErrorMsg)
		return &exchange.PeerError{Code: e.Code, Text: e.Text}
	}
	other := errors.New("connecting: the connection was reset")
	for _, tc := range []struct {
		name      string
		role      string
		said, err error
		want      string
	}{
		{"GIDs", "client", wire(serverErr), clientErr, clientErr.Error()},
		{"GIDs, server", "server", wire(clientErr), serverErr, serverErr.Error()},
		{"UD size", "client", wire(udErr), udErr, udErr.Error()},
		{"another check", "client", wire(udErr), clientErr,
			"the server said: " + udErr.Error() + "; this side then found: " + clientErr.Error()},
		{"not a check", "client", wire(errors.New("boom")), other, "the server said: boom; this side then found: " + other.Error()},
		{"not a check, server", "server", wire(errors.New("boom")), other, "the client said: boom; this side then found: " + other.Error()},
		{"a check, this side's is not", "server", wire(clientErr), other, "the client said: " + wire(clientErr).(*exchange.PeerError).Said() + "; this side then found: " + other.Error()},
	} {
		got := withPeerWord(tc.role, tc.said, tc.err)
		if got.Error() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
		var pe *exchange.PeerError
		if !errors.Is(got, tc.err) && !errors.Is(tc.err, got) {
			t.Errorf("%s: %v does not match this side's error", tc.name, got)
		}
		if strings.HasPrefix(tc.want, "the ") && !errors.As(got, &pe) {
			t.Errorf("%s: %v does not match the peer's error", tc.name, got)
		}
	}
	if n := strings.Count(withPeerWord("client", wire(serverErr), clientErr).Error(), "incompatible GIDs"); n != 1 {
		t.Errorf("the GIDs' error said %d times", n)
	}
}

// TestCheckSpecUDSize: a UD size over the most this side can offer as
// the path MTU fails before the client dials (checkSpec's checkMTU and
// udSizes): the port's active MTU within -m, and the GID's netdev only
// where a flag names the GID; a sweep (-a) and UD's default size, which
// fit the path MTU, pass. The size was checked only once connected: with
// no server the client waited out its dial and blamed the connection.
func TestCheckSpecUDSize(t *testing.T) {
	ud := func(size uint32) exchange.TestSpec {
		return exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: size}
	}
	withM := func(s exchange.TestSpec, m ibverbs.MTU) exchange.TestSpec { s.MTU = m; return s }
	sweep, dflt, rc, cm := ud(0), ud(4096), ud(4096), ud(1024)
	sweep.AllSizes, sweep.SizeDefault = true, true
	dflt.SizeDefault = true
	rc.ConnType = ibverbs.QPTypeRC
	cm.RdmaCM = true
	named, rule := Local{GIDIndex: 1}, Local{GIDIndex: -1}
	for _, tc := range []struct {
		name string
		l    Local
		spec exchange.TestSpec
		err  string
	}{
		{"over the port", rule, ud(4096), "a UD message is at most the path MTU, 1024 bytes here, not 4096: choose a smaller -s"},
		{"the port's", rule, ud(1024), ""},
		{"over -m", rule, withM(ud(1024), ibverbs.MTU512), "at most the path MTU, 512 bytes here, not 1024"},
		{"over the named GID's netdev", named, ud(1024), "at most the path MTU, 512 bytes here, not 1024"},
		{"the rule's GID's netdev", rule, ud(1024), ""},
		{"rdma_cm's GID", named, cm, ""},
		{"sweep", rule, sweep, ""},
		{"default", rule, dflt, ""},
		{"RC", rule, rc, ""},
	} {
		s := &session{local: tc.l, mtuCap: ibverbs.MTU512}
		s.portAttr.ActiveMTU = ibverbs.MTU1024
		_, err := udSizes(tc.spec, s.checkMTU(tc.spec))
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
		var ce *checkError
		if err != nil && (!errors.As(err, &ce) || ce.code != exchange.CodeUDSize) {
			t.Errorf("%s: %v is not the check of UD sizes", tc.name, err)
		}
	}
	if got, err := udSizes(sweep, ibverbs.MTU1024); err != nil || !slices.Equal(got, []uint32{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
		t.Errorf("sweep: %v, %v", got, err)
	}
}
