package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestParsePayload: perftest's words, little-endian, cut at the largest
// message; anything else fails naming the word.
func TestParsePayload(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want []byte
	}{
		{"0x11223344", 64, []byte{0x44, 0x33, 0x22, 0x11}},
		{"0x11223344,0xAABBCCDD\n", 64, []byte{0x44, 0x33, 0x22, 0x11, 0xdd, 0xcc, 0xbb, 0xaa}},
		{" 0x00000001 ,\n0xdeadbeef,", 64, []byte{1, 0, 0, 0, 0xef, 0xbe, 0xad, 0xde}},
		{"0x11223344,0x55667788", 6, []byte{0x44, 0x33, 0x22, 0x11, 0x88, 0x77}},
		{"0x11223344,bogus", 2, []byte{0x44, 0x33}}, // perftest stops reading at -s too
	} {
		got, err := parsePayload(tc.text, tc.max)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("parsePayload(%q, %d) = % x, %v; want % x", tc.text, tc.max, got, err, tc.want)
		}
	}
	for text, want := range map[string]string{
		"":                       "no words",
		" ,\n":                   "no words",
		"0x1122334":              `word 1, "0x1122334"`,
		"0x11223344,,0x11223344": `word 2, ""`,
		"0x11223344,0x1122334g":  `word 2, "0x1122334g"`,
		"11223344":               `word 1, "11223344"`,
		"0x+1223344":             `word 1, "0x+1223344"`,
	} {
		if _, err := parsePayload(text, 64); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parsePayload(%q): %v, want an error with %q", text, err, want)
		}
	}
}
