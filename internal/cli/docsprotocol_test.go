//go:build linux && cgo

package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestArchitectureProtocolMessages: docs/architecture.md names every
// message of the control protocol (exchange's message types) in its
// tree's internal/exchange box and in "How a test runs". Both lacked
// Offer (-R on RC swaps them where the diagram had a Barrier), Alive and
// Queued.
func TestArchitectureProtocolMessages(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, box, _ := strings.Cut(doc, "internal/exchange      pure Go")
	box, _, _ = strings.Cut(box, "fuzzed)")
	_, run, _ := strings.Cut(doc, "\n## How a test runs\n")
	run, _, _ = strings.Cut(run, "\n## ")
	if box == "" || run == "" {
		t.Fatal("architecture.md lacks the internal/exchange box or its section \"How a test runs\"")
	}
	for typ := exchange.TypeHello; typ <= exchange.TypeOffer; typ++ {
		name := map[string]string{"Spec": "TestSpec", "Error": "ErrorMsg"}[typ.String()]
		if name == "" {
			name = typ.String()
		}
		word := regexp.MustCompile(`\b` + name + `\b`)
		if !word.MatchString(box) {
			t.Errorf("the internal/exchange box does not list %s", name)
		}
		if typ == exchange.TypeSync {
			word = regexp.MustCompile(`\bBarrier\b`) // the diagram's name for a Sync
		}
		if !word.MatchString(run) {
			t.Errorf("\"How a test runs\" does not say where %s goes", name)
		}
	}
}
