//go:build linux && cgo

package rdmacm_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestMigrateWaitsForVerb: Migrate waits for a verb of the ID under way,
// which librdmacm sends through the channel the ID is on (id->channel),
// the one that rdma_migrate_id changes and that a request's Migrate then
// closes: Migrate ran beside the verb, which could write to a channel
// destroyed meanwhile.
func TestMigrateWaitsForVerb(t *testing.T) {
	_ = device(t)
	mine, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the ID, whose cleanup newID registers after this one.
	t.Cleanup(func() { closeOK(t, mine) })
	_, id := newID(t, rdmacm.PortSpaceTCP)
	entered, release := blockQPUse(t, "verb")
	verb := make(chan error, 1)
	go func() { verb <- id.SetTOS(0) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("SetTOS never began")
	}
	migrated := make(chan error, 1)
	go func() { migrated <- id.Migrate(mine) }()
	select {
	case err := <-migrated:
		close(release)
		t.Fatalf("Migrate returned (%v) while SetTOS was under way", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for what, c := range map[string]chan error{"SetTOS": verb, "Migrate": migrated} {
		select {
		case err := <-c:
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still runs 10 s after the verb ended", what)
		}
	}
	if id.Channel() != mine {
		t.Error("the ID is not on the channel it moved to")
	}
}
