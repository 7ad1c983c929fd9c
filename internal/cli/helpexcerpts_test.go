//go:build linux && cgo

package cli

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestHelpExcerptsInDocs: each `$ gorperf ... --help` excerpt in
// getting-started.md is what the command prints, up to a line "..."
// where it stops short. The write-bw excerpt had an older paragraph.
func TestHelpExcerptsInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(string(doc), "```\n$ gorperf ")[1:] {
		block, _, _ = strings.Cut(block, "```")
		cmdline, excerpt, _ := strings.Cut(block, "\n")
		args := strings.Fields(cmdline)
		if len(args) == 0 || args[len(args)-1] != "--help" {
			continue
		}
		n++
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != exitOK {
			t.Errorf("gorperf %s: exit %d: %s", cmdline, code, errOut)
			continue
		}
		want, cut := strings.CutSuffix(excerpt, "...\n")
		got := out.String()
		if cut && len(got) > len(want) {
			got = got[:len(want)]
		}
		if got != want {
			t.Errorf("getting-started.md's excerpt of gorperf %s is not its output: paste it again\n--- excerpt:\n%s\n--- output:\n%s", cmdline, want, got)
		}
	}
	if n < 2 {
		t.Errorf("found %d --help excerpts in getting-started.md, want gorperf's and write-bw's", n)
	}
}
