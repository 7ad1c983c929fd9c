//go:build linux && cgo

package bench

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestCheckGivenGID: the entry -x names on a RoCE port is taken only if it
// is a RoCE v2 GID; a RoCE v1 or an InfiniBand entry, an all-zero slot and
// QueryGID's own errors (an index past the table, an empty slot the driver
// answers with ENODATA) fail with why. soft-RoCE, where the device tests
// run, has no RoCE v1 entry to give -x.
func TestCheckGivenGID(t *testing.T) {
	gid := mustGID
	v2 := ibverbs.GIDEntry{Index: 1, Port: 1, GID: gid("::ffff:198.18.0.1"), Type: ibverbs.GIDTypeRoCEv2, Netdev: "eth0"}
	v1 := ibverbs.GIDEntry{Index: 2, Port: 1, GID: gid("::ffff:198.18.0.1"), Type: ibverbs.GIDTypeRoCEv1, Netdev: "eth0"}
	ib := ibverbs.GIDEntry{Index: 3, Port: 1, GID: gid("fe80::c42:a103:a1:b2c3"), Type: ibverbs.GIDTypeIB}
	zero := ibverbs.GIDEntry{Index: 4, Port: 1, Type: ibverbs.GIDTypeRoCEv2}
	pastTable := fmt.Errorf("GID index 300 out of range: mlx5_0 port 1 has 255 entries (0-254): %w", syscall.EINVAL)
	noData := fmt.Errorf("mlx5_0 port 1 GID index 5 is empty (the table has 255 slots): %w", syscall.ENODATA)
	for _, tc := range []struct {
		name  string
		index int
		e     ibverbs.GIDEntry
		err   error
		want  []string // substrings of the error; nil: taken
	}{
		{"RoCE v2", 1, v2, nil, nil},
		{"RoCE v1", 2, v1, nil, []string{"GID index 2 of mlx5_0 port 1 is RoCE v1 (::ffff:198.18.0.1), not RoCE v2", "leave -x out"}},
		{"InfiniBand", 3, ib, nil, []string{"GID index 3 of mlx5_0 port 1 is IB", "not RoCE v2"}},
		{"all-zero", 4, zero, nil, []string{"GID index 4 of mlx5_0 port 1 is empty", "gorperf devices"}},
		{"past the table", 300, ibverbs.GIDEntry{}, pastTable, []string{"out of range"}},
		{"ENODATA", 5, ibverbs.GIDEntry{}, noData, []string{"is empty"}},
	} {
		c, err := checkGivenGID("mlx5_0", 1, tc.index, tc.e, tc.err)
		if tc.want == nil {
			if err != nil || c.Entry != tc.e || c.Reason != "given with -x" {
				t.Errorf("%s: %+v, %v; want the entry, given with -x", tc.name, c, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: taken (%+v), want an error", tc.name, c)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("%s: %v does not wrap QueryGID's %v", tc.name, err, tc.err)
		}
	}
}

// TestLinkLocalFlag: a NoGIDError whose link-local entries the rule
// refused for that alone ends with the -x of the first, which takes it;
// another error, and a NoGIDError without them, stay as they were.
func TestLinkLocalFlag(t *testing.T) {
	ll := &ibverbs.NoGIDError{Rule: ibverbs.GIDRule{Family: 6}, LinkLocal: []int{2, 5}}
	err := linkLocalFlag(ll)
	if !strings.HasSuffix(err.Error(), "name its index (2 or 5): -x 2") || !errors.Is(err, error(ll)) {
		t.Errorf("with link-local entries: %q, want it to end with the index's -x and wrap the NoGIDError", err)
	}
	none := &ibverbs.NoGIDError{Rule: ibverbs.GIDRule{Family: 6}}
	if err := linkLocalFlag(none); err != error(none) {
		t.Errorf("without link-local entries: %v, want the NoGIDError as it was", err)
	}
	if err := linkLocalFlag(syscall.ENODEV); err != syscall.ENODEV {
		t.Errorf("another error: %v, want it as it was", err)
	}
	if err := linkLocalFlag(nil); err != nil {
		t.Errorf("no error: %v", err)
	}
}
