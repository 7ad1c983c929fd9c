// Command gendocs writes gorperf's command reference: markdown into
// docs/cli (committed, kept in sync by TestCLIReferenceInSync) and, with
// -man DIR, man pages into DIR.
//
//	go run ./internal/cli/gendocs            # make docs
//	go run ./internal/cli/gendocs -man build/man   # make man
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gorperf/gorperf/internal/cli"
	"github.com/spf13/cobra/doc"
)

func main() {
	md := flag.String("md", "docs/cli", "write the markdown reference into this `dir`")
	man := flag.String("man", "", "write man pages into this `dir` instead of markdown")
	flag.Parse()
	var err error
	if *man != "" {
		err = genManPages(*man)
	} else {
		err = genReference(*md)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// manDate is the date man pages carry, fixed so that they are reproducible.
var manDate = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// genReference writes the markdown reference of every gorperf command into
// dir, one file a command (gorperf.md, gorperf_write-bw.md, ...).
func genReference(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return doc.GenMarkdownTree(cli.DocTree(), dir)
}

// genManPages writes a section 1 man page for every gorperf command into dir.
func genManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	date := manDate
	return doc.GenManTree(cli.DocTree(), &doc.GenManHeader{
		Title:   "GORPERF",
		Section: "1",
		Source:  "gorperf",
		Manual:  "gorperf manual",
		Date:    &date,
	}, dir)
}
