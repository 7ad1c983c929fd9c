// Package counters reads an RDMA port's counters from sysfs, for
// gorperf's -W (perftest's --report-counters): the InfiniBand port
// counters under /sys/class/infiniband/DEV/ports/N/counters, and the
// driver's own under hw_counters (retransmissions, ECN marks, congestion
// notifications, out-of-buffer drops, …). It is pure Go and reads files
// only; the port's device need not be open.
//
// Counters count in their own units: port_xmit_data and port_rcv_data of
// counters/ count 4-byte words, as the InfiniBand specification has them.
package counters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The two directories of a port that hold counters.
var groups = []string{"hw_counters", "counters"}

// All, as the only name given to Open, reads every counter of the port
// and reports those that changed.
const All = "all"

// Set is the counters of one port that a test reports.
type Set struct {
	dir   string   // the port's sysfs directory
	names []string // "group/name", in the order given; every counter with All
	all   bool
}

// Open returns the set of port's counters of device named by names, found
// under sysfs (normally "/sys"). A name is a file of the port's
// directory, "hw_counters/NAME" or "counters/NAME" as perftest spells
// them, or a bare NAME, looked for in hw_counters and then counters; or
// All alone. Each named counter must exist and be readable: a typo fails
// here, before any test runs.
func Open(sysfs, device string, port int, names []string) (*Set, error) {
	dir := filepath.Join(sysfs, "class", "infiniband", device, "ports", strconv.Itoa(port))
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("counters of %s port %d: %w", device, port, err)
	}
	s := &Set{dir: dir}
	if len(names) == 1 && names[0] == All {
		s.all = true
		var err error
		if s.names, err = s.list(); err != nil {
			return nil, err
		}
		return s, nil
	}
	for _, n := range names {
		full, err := s.resolve(n)
		if err != nil {
			return nil, fmt.Errorf("counter %q of %s port %d: %w", n, device, port, err)
		}
		if !slices.Contains(s.names, full) {
			s.names = append(s.names, full)
		}
	}
	if _, err := s.Read(); err != nil {
		return nil, err
	}
	return s, nil
}

// resolve turns a name as given into "group/name".
func (s *Set) resolve(n string) (string, error) {
	switch {
	case n == "" || n == All:
		return "", errors.New("want a counter's name (all goes alone)")
	case strings.Contains(n, ".."):
		return "", errors.New("not a counter's name")
	case strings.Contains(n, "/"):
		g, _, _ := strings.Cut(n, "/")
		if !slices.Contains(groups, g) {
			return "", fmt.Errorf("want hw_counters/NAME or counters/NAME")
		}
		if _, err := os.Stat(filepath.Join(s.dir, n)); err != nil {
			return "", s.unknown(n)
		}
		return n, nil
	}
	for _, g := range groups {
		if _, err := os.Stat(filepath.Join(s.dir, g, n)); err == nil {
			return g + "/" + n, nil
		}
	}
	return "", s.unknown(n)
}

// unknown is the error for a counter the port does not have: it lists
// those it has.
func (s *Set) unknown(n string) error {
	have, err := s.list()
	if err != nil || len(have) == 0 {
		return errors.New("no such counter; the port has none")
	}
	return fmt.Errorf("no such counter; the port has %s", strings.Join(have, ", "))
}

// list returns every counter of the port, sorted: the regular files of
// its counter directories that hold a number. hw_counters/lifespan, the
// driver's cache time, is a setting and is left out.
func (s *Set) list() ([]string, error) {
	var names []string
	for _, g := range groups {
		ents, err := os.ReadDir(filepath.Join(s.dir, g))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			n := g + "/" + e.Name()
			if !e.Type().IsRegular() || n == "hw_counters/lifespan" {
				continue
			}
			if _, err := s.read(n); err == nil {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

func (s *Set) read(name string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter %s: %w", name, err)
	}
	return v, nil
}

// Snapshot is the values of a Set's counters at one moment.
type Snapshot map[string]uint64

// Read reads the set's counters now. With All, a counter that cannot be
// read is left out, so a driver that fails one read does not stop the
// others.
func (s *Set) Read() (Snapshot, error) {
	snap := make(Snapshot, len(s.names))
	for _, n := range s.names {
		v, err := s.read(n)
		if err != nil {
			if s.all {
				continue
			}
			return nil, err
		}
		snap[n] = v
	}
	return snap, nil
}

// Change is how much one counter moved between two snapshots.
type Change struct {
	Name  string // "hw_counters/NAME" or "counters/NAME"
	Delta uint64
	// Reset reports that the counter went backwards (it was reset, or a
	// narrow counter wrapped): Delta is then unknown and 0.
	Reset bool
}

// Diff returns the changes from before to after: of every named counter
// in the order given, or, with All, of those that changed, by name.
func (s *Set) Diff(before, after Snapshot) []Change {
	var cs []Change
	for _, n := range s.names {
		b, okb := before[n]
		a, oka := after[n]
		switch {
		case !okb || !oka:
			continue
		case a < b:
			cs = append(cs, Change{Name: n, Reset: true})
		case a > b || !s.all:
			cs = append(cs, Change{Name: n, Delta: a - b})
		}
	}
	return cs
}
