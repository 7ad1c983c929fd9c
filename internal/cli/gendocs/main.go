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

	"github.com/gorperf/gorperf/internal/cli"
)

func main() {
	md := flag.String("md", "docs/cli", "write the markdown reference into this `dir`")
	man := flag.String("man", "", "write man pages into this `dir` instead of markdown")
	flag.Parse()
	var err error
	if *man != "" {
		err = cli.GenManPages(*man)
	} else {
		err = cli.GenReference(*md)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
