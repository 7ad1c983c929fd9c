//go:build linux && cgo

// docs/cli is generated from the full command tree, which a build without
// the bindings (cgo off, or not Linux) does not have.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCLIReferenceInSync checks that docs/cli is what the commands generate.
func TestCLIReferenceInSync(t *testing.T) {
	const committed = "../../../docs/cli"
	dir := t.TempDir()
	if err := genReference(dir); err != nil {
		t.Fatal(err)
	}
	names := func(d string) []string {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatalf("%v: run make docs", err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	got, want := names(committed), names(dir)
	if !slices.Equal(got, want) {
		t.Errorf("docs/cli holds %q, the commands generate %q: run make docs", got, want)
	}
	for _, name := range want {
		gen, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			continue // reported above
		}
		if !bytes.Equal(gen, old) {
			t.Errorf("docs/cli/%s is out of date: run make docs", name)
		}
	}
}

// TestManPages checks that man pages generate and are reproducible.
func TestManPages(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := genManPages(d); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no man pages")
	}
	for _, e := range entries {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", e.Name())
		}
	}
}
