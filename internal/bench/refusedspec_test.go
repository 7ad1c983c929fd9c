//go:build linux && cgo

package bench

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestRefusedNamesItsTest: a test serve refuses over its limits, as the
// client asks (a server of many tests) or at its turn (a one-test
// server), is reported as a *RefusedError that carries the test asked
// for, so that serve --json names the test; the report said only
// "refused: ..." and the document's test was empty.
func TestRefusedNamesItsTest(t *testing.T) {
	for _, once := range []bool{false, true} {
		s := newServing(t, once, nil)
		c, err := s.hello(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sp := s.overLimits()
		sp.Test = exchange.ReadBW
		if err := s.ask(c, sp, 5*time.Second); err == nil {
			t.Fatalf("once %v: a test over the limits was not refused", once)
		}
		got := s.reported("refused", 1, 3*time.Second)
		if len(got) != 1 {
			t.Fatalf("once %v: done got %q; want the refusal", once, s.reports())
		}
		var re *RefusedError
		if !errors.As(got[0], &re) {
			t.Fatalf("once %v: done got %v (%T); want a *RefusedError", once, got[0], got[0])
		}
		if re.Spec.Test != exchange.ReadBW || re.Spec.NumQPs != sp.NumQPs || !errors.Is(got[0], exchange.ErrOverLimit) {
			t.Errorf("once %v: refused test %v of %d QPs (%v); want read_bw of %d QPs over the limits", once, re.Spec.Test, re.Spec.NumQPs, got[0], sp.NumQPs)
		}
		if !strings.Contains(got[0].Error(), "refused: ") {
			t.Errorf("once %v: %q; want it to say refused", once, got[0])
		}
	}
}
