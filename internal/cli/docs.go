package cli

import "github.com/spf13/cobra"

// DocTree returns the whole command tree as the user sees it, for
// generating the reference and man pages (internal/cli/gendocs): with the
// completion command cobra adds at run time, and without cobra's dated
// "Auto generated" line, so that generated files are reproducible. The
// generators live outside this package so that the gorperf binary does
// not link cobra/doc and its markdown and YAML packages, whose package
// initialisation alone took 25 ms of every start under emulation.
func DocTree() *cobra.Command {
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
