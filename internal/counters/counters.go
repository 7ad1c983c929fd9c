// Package counters reads an RDMA port's counters from sysfs, for
// gorperf's -W (perftest's --report-counters): the InfiniBand port
// counters under /sys/class/infiniband/DEV/ports/N/counters, and the
// driver's own under hw_counters (retransmissions, ECN marks, congestion
// notifications, out-of-buffer drops, …). It is pure Go and reads files
// only; the port's device need not be open.
//
// Counters count in their own units: port_xmit_data and port_rcv_data of
// counters/ count 4-byte words, as the InfiniBand specification has them.
// The counters of counters/ are the InfiniBand PMA's, which stop at their
// maximum rather than wrap (4 to 32 bits wide, 64 for the extended ones):
// Diff flags one that stands there as saturated (Change.Saturated).
//
// The kernel caches a port's hw_counters: a read gets the values the
// driver gave at most hw_counters/lifespan milliseconds ago (10 by
// default), and asks the driver again only once that time has passed
// since it last did. Two reads closer than that would see the same
// values however much traffic passed between them, so a Set's Read waits
// out the lifespan since its previous Read first (see Set.Read).
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
	"time"
)

// The two directories of a port that hold counters.
var groups = []string{"hw_counters", "counters"}

// All, as the only name given to Open, reads every counter of the port
// and reports those that changed.
const All = "all"

// Set is the counters of one port that a test reports. It is not safe
// for use by several goroutines at once.
type Set struct {
	dir   string   // the port's sysfs directory
	names []string // "group/name", in the order given; every counter with All
	all   bool
	// cached is how long after a read of the port's hw_counters the
	// kernel may still answer the next from its cache: the lifespan and a
	// tick, where names has one of them and the port has a lifespan;
	// else 0.
	cached time.Duration
	hwRead time.Time // when Read last finished reading hw_counters
}

// tick is the longest a kernel's clock tick (a jiffy) can be, at
// CONFIG_HZ=100. The kernel keeps the lifespan in ticks and asks the
// driver again only when more than the lifespan's ticks have passed since
// it last did (so a lifespan of 0 still caches within a tick); a wait of
// the lifespan rounded up to whole ticks, and one tick more, covers that
// whatever the kernel's tick.
const tick = 10 * time.Millisecond

// Open returns the set of port's counters of device named by names, found
// under sysfs (normally "/sys"). A name is a file of the port's
// directory, "hw_counters/NAME" or "counters/NAME" as perftest spells
// them, or a bare NAME, looked for in hw_counters and then counters; or
// All alone. Each named counter must exist and be readable: a typo fails
// here, before any test runs. Where the set has hw_counters, Open also
// reads the port's hw_counters/lifespan, for Read.
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
		s.readLifespan()
		s.hwRead = time.Now() // list read every counter
		return s, nil
	}
	for _, n := range names {
		full, err := s.resolve(n)
		if err == nil && full == lifespan {
			err = errors.New("hw_counters/lifespan is how long the kernel caches hw_counters, in ms: a setting, not a counter")
		}
		if err != nil {
			return nil, fmt.Errorf("counter %q of %s port %d: %w", n, device, port, err)
		}
		if !slices.Contains(s.names, full) {
			s.names = append(s.names, full)
		}
	}
	s.readLifespan()
	if _, err := s.Read(); err != nil {
		return nil, err
	}
	return s, nil
}

// readLifespan sets s.cached from hw_counters/lifespan, in milliseconds,
// where s has a counter of hw_counters. A port without the file (a kernel
// that does not cache) or with one that cannot be read leaves it 0: Read
// then does not wait.
func (s *Set) readLifespan() {
	if !slices.ContainsFunc(s.names, func(n string) bool { return strings.HasPrefix(n, "hw_counters/") }) {
		return
	}
	if ms, err := s.read(lifespan); err == nil && ms <= maxLifespan {
		// The kernel reads anew once more than the lifespan, counted in
		// whole ticks, has passed: round up to a tick, and add one.
		l := time.Duration(ms) * time.Millisecond
		s.cached = (l+tick-1)/tick*tick + tick
	}
}

// lifespan is the file of a port's hw_counters cache time: a setting
// that reads as a number, not a counter.
const lifespan = "hw_counters/lifespan"

// maxLifespan is the longest hw_counters/lifespan, in milliseconds, that
// Read waits out: the kernel takes at most 10 s.
const maxLifespan = 10000

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
			if !e.Type().IsRegular() || n == lifespan {
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
//
// Where the set has hw_counters and the kernel caches them, Read first
// sleeps until the port's lifespan (and a kernel tick) has passed since
// the end of the set's previous Read, Open's included, so that the values
// are fresh from the driver and not the ones that Read saw: without it a
// test shorter than the lifespan would report no change at all. Another
// reader of the same port (the other side of a loopback test, say) can
// still refresh the cache in between; the values are then at most that
// old.
func (s *Set) Read() (Snapshot, error) {
	if s.cached > 0 {
		if !s.hwRead.IsZero() {
			if wait := s.cached - time.Since(s.hwRead); wait > 0 {
				time.Sleep(wait)
			}
		}
		defer func() { s.hwRead = time.Now() }()
	}
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
	// Saturated reports that the counter, one of counters/, stood at its
	// maximum at the end: the InfiniBand PMA's counters stop there
	// rather than wrap, so Delta is only how much it moved before it
	// stopped (0 where it was stuck from the start), and the true
	// change is unknown.
	Saturated bool
}

// pmaBits are the widths of the PMA counters the kernel shows under
// counters/ (drivers/infiniband/core/sysfs.c): a PortCounters field of
// 4 to 32 bits, or 64 for those only PortCountersExtended has. Where
// the port has the extended set, port_xmit_data and the other three 32-bit
// data and packet counters are 64 bits wide there; one of them at 2^32-1
// is then taken for saturated all the same, which a 64-bit counter is
// very unlikely to be at.
var pmaBits = map[string]uint{
	"symbol_error":                    16,
	"link_error_recovery":             8,
	"link_downed":                     8,
	"port_rcv_errors":                 16,
	"port_rcv_remote_physical_errors": 16,
	"port_rcv_switch_relay_errors":    16,
	"port_xmit_discards":              16,
	"port_xmit_constraint_errors":     8,
	"port_rcv_constraint_errors":      8,
	"local_link_integrity_errors":     4,
	"excessive_buffer_overrun_errors": 4,
	"VL15_dropped":                    16,
	"port_xmit_data":                  32,
	"port_rcv_data":                   32,
	"port_xmit_packets":               32,
	"port_rcv_packets":                32,
	"port_xmit_wait":                  32,
	"unicast_xmit_packets":            64,
	"unicast_rcv_packets":             64,
	"multicast_xmit_packets":          64,
	"multicast_rcv_packets":           64,
}

// saturated reports whether v, the value of counter name ("group/name"),
// is a PMA counter's maximum: all ones in its width, or, for a counter
// of counters/ whose width pmaBits does not know, in 8, 16 or 32 bits.
// hw_counters are the driver's own and 64 bits wide: never saturated.
func saturated(name string, v uint64) bool {
	g, n, _ := strings.Cut(name, "/")
	if g != "counters" {
		return false
	}
	if bits, ok := pmaBits[n]; ok {
		return v == 1<<bits-1 // 1<<64-1 is all ones too
	}
	return v == 1<<8-1 || v == 1<<16-1 || v == 1<<32-1
}

// Diff returns the changes from before to after: of every named counter
// in the order given, or, with All, of those that changed or are
// saturated, by name.
func (s *Set) Diff(before, after Snapshot) []Change {
	var cs []Change
	for _, n := range s.names {
		b, okb := before[n]
		a, oka := after[n]
		sat := saturated(n, a)
		switch {
		case !okb || !oka:
			continue
		case a < b:
			cs = append(cs, Change{Name: n, Reset: true})
		case a > b || sat || !s.all:
			cs = append(cs, Change{Name: n, Delta: a - b, Saturated: sat})
		}
	}
	return cs
}
