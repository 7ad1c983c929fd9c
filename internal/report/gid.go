package report

import (
	"strconv"
	"strings"
)

// FormatGID formats a GID as perftest prints it: the sixteen bytes in
// decimal, each at least two digits, separated by colons, for example
// 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:01 for ::ffff:198.18.0.1.
func FormatGID(gid [16]byte) string {
	var sb strings.Builder
	sb.Grow(16 * 4)
	for i, b := range gid {
		if i > 0 {
			sb.WriteByte(':')
		}
		if b < 10 {
			sb.WriteByte('0')
		}
		sb.WriteString(strconv.Itoa(int(b)))
	}
	return sb.String()
}

// cHex formats v the way C's printf("%#0*x", width, v) does: the width
// counts the 0x prefix, and zero is printed without a prefix. perftest's
// address lines depend on both quirks (LID 0 prints as 0000).
func cHex(v uint64, width int) string {
	digits := strconv.FormatUint(v, 16)
	prefix := "0x"
	if v == 0 {
		prefix = ""
	}
	if pad := width - len(prefix) - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	return prefix + digits
}
