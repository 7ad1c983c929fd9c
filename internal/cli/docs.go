package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date man pages carry, fixed so that they are reproducible.
var manDate = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// docTree returns the whole command tree as the user sees it, with the
// completion command cobra adds at run time, and without cobra's dated
// "Auto generated" line, so that generated files are reproducible.
func docTree() *cobra.Command {
	root := newCmdRoot(newFactory())
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// GenReference writes the markdown reference of every gorperf command into
// dir, one file a command (gorperf.md, gorperf_write-bw.md, ...).
func GenReference(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return doc.GenMarkdownTree(docTree(), dir)
}

// GenManPages writes a section 1 man page for every gorperf command into dir.
func GenManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	date := manDate
	return doc.GenManTree(docTree(), &doc.GenManHeader{
		Title:   "GORPERF",
		Section: "1",
		Source:  "gorperf",
		Manual:  "gorperf manual",
		Date:    &date,
	}, dir)
}
