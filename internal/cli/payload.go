package cli

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// parsePayload parses --payload_file_path's text: perftest's form of a
// payload, 32-bit words written 0xaaaaaaaa and separated by commas (and
// white space), each stored little-endian, the way perftest stores them. It
// keeps at most max bytes, as perftest does with its -s. readPayload, in
// bench.go, reads the file.
func parsePayload(text string, max int) ([]byte, error) {
	const form = "want 0x and 8 hex digits, as in 0x1a2b3c4d,0x5e6f7a8b"
	text = strings.TrimSuffix(strings.TrimSpace(text), ",")
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("no words: %s", form)
	}
	var p []byte
	for i, tok := range strings.Split(text, ",") {
		tok = strings.TrimSpace(tok)
		hex, ok := strings.CutPrefix(strings.ToLower(tok), "0x")
		if !ok || len(hex) != 8 {
			return nil, fmt.Errorf("word %d, %q: %s", i+1, tok, form)
		}
		v, err := strconv.ParseUint(hex, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("word %d, %q: %s", i+1, tok, form)
		}
		p = binary.LittleEndian.AppendUint32(p, uint32(v))
		if len(p) >= max {
			return p[:max], nil
		}
	}
	return p, nil
}
