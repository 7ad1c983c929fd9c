package report

import (
	"fmt"
	"io"
	"strconv"
)

// Counter is how much one of a side's port counters moved during one
// size's run (gorperf's -W, perftest's --report-counters).
type Counter struct {
	// Name is the counter's file under the port's sysfs directory, e.g.
	// "hw_counters/out_of_buffer" or "counters/port_xmit_data".
	Name  string `json:"name"`
	Delta uint64 `json:"delta"`
	// Reset reports that the counter went backwards during the run (it
	// was reset, or wrapped), so that Delta is unknown.
	Reset bool `json:"reset,omitempty"`
	// Saturated reports that the counter, an InfiniBand PMA counter of
	// counters/, stood at its maximum at the end of the run, where it
	// stops rather than wrap: Delta is what it moved before it stopped,
	// and the true change is that or more.
	Saturated bool `json:"saturated,omitempty"`
}

// WriteCounters writes the counters of each size of results under a
// title naming the device and port, as a table: size, counter, change. It
// writes nothing if no size has counters to report and all is false; with
// all (every counter that moved was asked for) a size where none moved
// says so.
func WriteCounters(w io.Writer, device string, port int, results []SizeResult, all bool) error {
	show := all
	width := len("counter")
	for _, r := range results {
		show = show || len(r.Counters) > 0
		for _, c := range r.Counters {
			width = max(width, len(c.Name))
		}
	}
	if !show {
		return nil
	}
	p := &printer{w: w}
	p.printf(" Port counters of %s port %d, change during each size:\n", device, port)
	p.printf(" %-10s %-*s %s\n", "#bytes", width, "counter", "change")
	for _, r := range results {
		if len(r.Counters) == 0 {
			p.printf(" %-10d (none moved)\n", r.Bytes)
		}
		for _, c := range r.Counters {
			d := strconv.FormatUint(c.Delta, 10)
			switch {
			case c.Reset:
				d = "reset during the run"
			case c.Saturated && c.Delta == 0:
				d = "saturated: stuck at its maximum"
			case c.Saturated:
				d = "saturated: " + d + " or more"
			}
			p.printf(" %-10d %-*s %s\n", r.Bytes, width, c.Name, d)
		}
	}
	p.printf("%s", rule)
	return p.err
}

// counterColumns returns the names of the counters of results, in the
// order they first appear, for CSV columns.
func counterColumns(results []SizeResult) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range results {
		for _, c := range r.Counters {
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// counterCells returns r's cells for the columns names: the change, or
// an empty cell for a counter r lacks, that was reset or that saturated
// (whose change is unknown).
func counterCells(r SizeResult, names []string) []string {
	cells := make([]string, len(names))
	for i, n := range names {
		for _, c := range r.Counters {
			if c.Name == n && !c.Reset && !c.Saturated {
				cells[i] = fmt.Sprint(c.Delta)
			}
		}
	}
	return cells
}
