package report

import (
	"fmt"
	"io"
)

// printer writes formatted text and remembers the first error, so that a
// block of lines can be written without checking each one.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}
