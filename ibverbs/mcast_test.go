//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// A UD QP attaches to a group and detaches; the verbs refuse an RC QP, a
// unicast GID, and a detach from a group the QP is not attached to.
func TestAttachMcast(t *testing.T) {
	e := newSRQEnv(t)
	ud := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, e.port, e.gid)
	rc := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeRC}, nil, e.port, e.gid)
	group := parseGID(t, "::ffff:239.255.198.18")
	if err := ud.qp.AttachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	if err := ud.qp.AttachMcast(parseGID(t, "ff0e::1:2"), 0); err != nil {
		t.Fatalf("a second group: %v", err)
	}
	if err := ud.qp.DetachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	// ff0e::1:2 stays attached: the side's cleanup closes the QP, which
	// the kernel refuses unless Close detaches it first.
	if err := ud.qp.DetachMcast(group, 0); err == nil {
		t.Error("a second detach from the group succeeded")
	}
	if err := rc.qp.AttachMcast(group, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("AttachMcast on an RC QP = %v, want EINVAL", err)
	}
	if err := ud.qp.AttachMcast(ibverbs.GIDFromIP([]byte{198, 18, 0, 1}), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("AttachMcast of a unicast GID = %v, want EINVAL", err)
	}
}

// A group attached twice is attached once, in the kernel and for Close,
// which detaches it once and then destroys the QP.
func TestAttachMcastTwice(t *testing.T) {
	e := newSRQEnv(t)
	ud := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, e.port, e.gid)
	group := parseGID(t, "ff0e::1:3")
	for range 2 {
		if err := ud.qp.AttachMcast(group, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := ud.qp.Close(); err != nil {
		t.Errorf("closing a QP attached twice to a group: %v", err)
	}
}

func parseGID(t *testing.T, s string) ibverbs.GID {
	t.Helper()
	g, err := ibverbs.ParseGID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A group attached with one LID and then another is refused the second
// time: the kernel would count two attaches that rxe made one, only one
// detach could succeed, and Close would fail with EBUSY for ever (as it
// did before the refusal). The refused attach leaves the QP closable, and
// after a detach the group can be attached with the other LID.
func TestAttachMcastOtherLID(t *testing.T) {
	e := newSRQEnv(t)
	ud := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, e.port, e.gid)
	group := parseGID(t, "ff0e::1:4")
	if err := ud.qp.AttachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	err := ud.qp.AttachMcast(group, 0xc001)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "already attached") {
		t.Errorf("attaching the group with another LID = %v, want EINVAL saying it is already attached", err)
	}
	if err := ud.qp.Close(); err != nil {
		t.Fatalf("closing the QP: %v", err)
	}

	ud = newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, e.port, e.gid)
	if err := ud.qp.AttachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	if err := ud.qp.DetachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	if err := ud.qp.AttachMcast(group, 0xc001); err != nil {
		t.Fatalf("attaching the group with another LID after a detach: %v", err)
	}
	if err := ud.qp.Close(); err != nil {
		t.Errorf("closing the QP: %v", err)
	}
}
