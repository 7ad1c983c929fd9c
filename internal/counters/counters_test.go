package counters

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakePort makes a port directory under a temporary sysfs with files as
// given ("group/name": contents) and returns the sysfs root.
func fakePort(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for n, v := range files {
		p := filepath.Join(root, "class/infiniband/rxe0/ports/1", n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func set(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for n, v := range files {
		if err := os.WriteFile(filepath.Join(root, "class/infiniband/rxe0/ports/1", n), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNamedCounters(t *testing.T) {
	root := fakePort(t, map[string]string{
		"hw_counters/sent_pkts":    "100\n",
		"hw_counters/rcvd_pkts":    "7\n",
		"hw_counters/lifespan":     "10\n",
		"counters/port_xmit_data":  "4000\n",
		"counters/symbol_error":    "0\n",
		"counters/port_rcv_errors": "N/A (no PMA)\n",
		"state":                    "4: ACTIVE\n",
	})
	// Both spellings; a bare name is looked up, hw_counters first; a
	// repeat is reported once.
	s, err := Open(root, "rxe0", 1, []string{"counters/port_xmit_data", "sent_pkts", "symbol_error", "hw_counters/sent_pkts"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	set(t, root, map[string]string{"hw_counters/sent_pkts": "2100\n", "counters/port_xmit_data": "4500"})
	after, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Name: "counters/port_xmit_data", Delta: 500},
		{Name: "hw_counters/sent_pkts", Delta: 2000},
		{Name: "counters/symbol_error", Delta: 0}, // named: reported though it did not move
	}
	if got := s.Diff(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v\nwant %+v", got, want)
	}
	// A counter that went backwards is reported as reset, with no delta.
	set(t, root, map[string]string{"hw_counters/sent_pkts": "3\n"})
	again, _ := s.Read()
	if got := s.Diff(after, again); !got[1].Reset || got[1].Delta != 0 || got[0].Reset {
		t.Errorf("after a reset: %+v", got)
	}
}

func TestAllCounters(t *testing.T) {
	root := fakePort(t, map[string]string{
		"hw_counters/sent_pkts":    "100",
		"hw_counters/rcvd_pkts":    "7",
		"hw_counters/lifespan":     "10",
		"counters/port_xmit_data":  "4000",
		"counters/port_rcv_errors": "N/A (no PMA)",
	})
	s, err := Open(root, "rxe0", 1, []string{All})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Read()
	// lifespan is a setting and the unreadable counter is skipped.
	if want := []string{"counters/port_xmit_data", "hw_counters/rcvd_pkts", "hw_counters/sent_pkts"}; !reflect.DeepEqual(s.names, want) {
		t.Errorf("all = %q, want %q", s.names, want)
	}
	set(t, root, map[string]string{"hw_counters/sent_pkts": "150", "hw_counters/lifespan": "99"})
	after, _ := s.Read()
	// Only what moved, by name.
	if got, want := s.Diff(before, after), []Change{{Name: "hw_counters/sent_pkts", Delta: 50}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v, want %+v", got, want)
	}
	// A counter that stops reading is left out of All's snapshot and its diff.
	set(t, root, map[string]string{"hw_counters/rcvd_pkts": "gone"})
	if snap, err := s.Read(); err != nil || len(snap) != 2 {
		t.Errorf("Read with an unreadable counter: %v, %v", snap, err)
	}
}

func TestOpenErrors(t *testing.T) {
	root := fakePort(t, map[string]string{"hw_counters/sent_pkts": "1", "counters/port_xmit_data": "x", "hw_counters/lifespan": "10"})
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"sent_pkt"}, `counter "sent_pkt" of rxe0 port 1: no such counter; the port has hw_counters/sent_pkts`},
		{[]string{"hw_counters/nope"}, "no such counter"},
		{[]string{"ports/../../x"}, "not a counter's name"},
		{[]string{"state/x"}, "want hw_counters/NAME or counters/NAME"},
		{[]string{"sent_pkts", All}, "all goes alone"},
		{[]string{""}, "want a counter's name"},
		{[]string{"port_xmit_data"}, `counter counters/port_xmit_data: strconv.ParseUint: parsing "x"`},
		// The kernel's cache time reads as a number but counts nothing.
		{[]string{"lifespan"}, `counter "lifespan" of rxe0 port 1: hw_counters/lifespan is how long the kernel caches hw_counters, in ms: a setting, not a counter`},
		{[]string{"sent_pkts", "hw_counters/lifespan"}, "a setting, not a counter"},
	} {
		_, err := Open(root, "rxe0", 1, tc.names)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want %q", tc.names, err, tc.want)
		}
	}
	if _, err := Open(root, "rxe9", 1, []string{All}); err == nil || !strings.Contains(err.Error(), "counters of rxe9 port 1") {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := Open(root, "rxe0", 2, []string{"sent_pkts"}); err == nil {
		t.Error("unknown port: no error")
	}
}

// TestReadWaitsOutLifespan: the kernel answers reads of hw_counters from
// a cache for hw_counters/lifespan ms, so each Read of a set with one of
// them starts that long (and a kernel tick) after the previous one ends,
// Open's included; a set of counters/ alone, or a port without a
// lifespan, does not wait.
func TestReadWaitsOutLifespan(t *testing.T) {
	root := fakePort(t, map[string]string{
		"hw_counters/sent_pkts":   "1",
		"hw_counters/lifespan":    "60",
		"counters/port_xmit_data": "2",
	})
	const want = 60*time.Millisecond + tick
	for _, names := range [][]string{{"sent_pkts"}, {"counters/port_xmit_data", "hw_counters/sent_pkts"}, {All}} {
		t0 := time.Now()
		s, err := Open(root, "rxe0", 1, names)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := s.Read(); err != nil {
				t.Fatal(err)
			}
		}
		// Open's read, then two more, each want after the one before.
		if d := time.Since(t0); d < 2*want {
			t.Errorf("%q: Open and two Reads took %v, want at least %v", names, d, 2*want)
		}
	}
	s, err := Open(root, "rxe0", 1, []string{"port_xmit_data"})
	if err != nil {
		t.Fatal(err)
	}
	if s.cached != 0 {
		t.Errorf("counters/ alone: Read waits %v, want 0", s.cached)
	}
	// A lifespan that is not a whole number of the longest ticks is
	// rounded up to one: the kernel counts it in ticks.
	for ms, wait := range map[string]time.Duration{"15": 30 * time.Millisecond, "0": tick, "10": 20 * time.Millisecond} {
		s, err := Open(fakePort(t, map[string]string{"hw_counters/sent_pkts": "1", "hw_counters/lifespan": ms}), "rxe0", 1, []string{"sent_pkts"})
		if err != nil {
			t.Fatal(err)
		}
		if s.cached != wait {
			t.Errorf("lifespan %s ms: Read waits %v, want %v", ms, s.cached, wait)
		}
	}
	noLifespan := fakePort(t, map[string]string{"hw_counters/sent_pkts": "1"})
	if s, err = Open(noLifespan, "rxe0", 1, []string{"sent_pkts"}); err != nil {
		t.Fatal(err)
	}
	if s.cached != 0 {
		t.Errorf("no hw_counters/lifespan: Read waits %v, want 0", s.cached)
	}
}

// TestSaturated: a counter of counters/ (the InfiniBand PMA's, which stop
// at their maximum) that ends at all ones in its width is flagged
// saturated, with what it moved before it stopped, also where it did not
// move at all; a 64-bit one at 65535, a driver's hw_counter at 2^32-1 and
// a counter below its maximum are not.
func TestSaturated(t *testing.T) {
	files := map[string]string{
		"counters/port_xmit_data":              "4000",
		"counters/symbol_error":                "100",
		"counters/link_downed":                 "3",
		"counters/local_link_integrity_errors": "2",
		"counters/unicast_xmit_packets":        "60000",
		"counters/vendor_thing":                "1",
		"hw_counters/sent_pkts":                "1",
	}
	root := fakePort(t, files)
	names := []string{"port_xmit_data", "symbol_error", "link_downed", "local_link_integrity_errors",
		"unicast_xmit_packets", "vendor_thing", "sent_pkts"}
	s, err := Open(root, "rxe0", 1, names)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Read()
	set(t, root, map[string]string{
		"counters/port_xmit_data":              "4294967295", // 2^32-1: 32 bits
		"counters/symbol_error":                "65535",      // 16 bits
		"counters/local_link_integrity_errors": "15",         // 4 bits
		"counters/unicast_xmit_packets":        "65535",      // 64 bits: not
		"counters/vendor_thing":                "255",        // unknown width: 8 bits
		"hw_counters/sent_pkts":                "4294967295", // the driver's: not
	})
	after, _ := s.Read()
	want := []Change{
		{Name: "counters/port_xmit_data", Delta: 4294963295, Saturated: true},
		{Name: "counters/symbol_error", Delta: 65435, Saturated: true},
		{Name: "counters/link_downed", Delta: 0},
		{Name: "counters/local_link_integrity_errors", Delta: 13, Saturated: true},
		{Name: "counters/unicast_xmit_packets", Delta: 5535},
		{Name: "counters/vendor_thing", Delta: 254, Saturated: true},
		{Name: "hw_counters/sent_pkts", Delta: 4294967294},
	}
	if got := s.Diff(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff =\n %+v\nwant\n %+v", got, want)
	}
	// Stuck at the maximum: no movement, still saturated; All reports
	// such a counter though it did not move.
	again, _ := s.Read()
	if got := s.Diff(after, again); !got[0].Saturated || got[0].Delta != 0 || got[2].Saturated || got[4].Saturated {
		t.Errorf("stuck: %+v", got)
	}
	all, err := Open(root, "rxe0", 1, []string{All})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := all.Read()
	a, _ := all.Read()
	var got []string
	for _, c := range all.Diff(b, a) {
		if !c.Saturated || c.Delta != 0 {
			t.Errorf("all, nothing moved: %+v", c)
		}
		got = append(got, c.Name)
	}
	if want := []string{"counters/local_link_integrity_errors", "counters/port_xmit_data", "counters/symbol_error", "counters/vendor_thing"}; !reflect.DeepEqual(got, want) {
		t.Errorf("all, nothing moved: %q, want the saturated %q", got, want)
	}
}
