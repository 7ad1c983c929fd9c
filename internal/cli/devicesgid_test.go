package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestDevicesIndexPast255: an entry past index 255, which no test can use
// (the verbs' GID index is 8 bits), is marked so in the text, beside its
// address's flags, and in the JSON; 255 is not. They were listed as any
// other entry.
func TestDevicesIndexPast255(t *testing.T) {
	d := fakeDevices()[:1]
	p := &d[0].Ports[0]
	p.GIDs = append(p.GIDs,
		gidReport{Index: 255, GID: "::ffff:198.18.0.7", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.7"},
		gidReport{Index: 256, GID: "::ffff:198.18.0.8", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.8"},
		gidReport{Index: 257, GID: "2001:2::9", Type: "RoCE v2", Netdev: "rxeveth0", IP: "2001:2::9", AddrFlags: "tentative"},
	)
	var b bytes.Buffer
	if err := writeDevicesText(&b, d); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, tc := range []struct{ ip, note string }{
		{"198.18.0.1", ""},
		{"198.18.0.7", ""},
		{"198.18.0.8", " (past index 255: unusable)"},
		{"2001:2::9", " (tentative, past index 255: unusable)"},
	} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "  "+tc.ip) })
		if i < 0 || !strings.HasSuffix(lines[i], "  "+tc.ip+tc.note) {
			t.Errorf("%s: want its line to end %q:\n%s", tc.ip, tc.ip+tc.note, &b)
		}
	}

	f, out, _ := newTestFactory(d, nil)
	if code := run(context.Background(), f, []string{"devices", "--json"}); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	var doc struct {
		Devices []struct {
			Ports []struct {
				GIDs []map[string]any
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, g := range doc.Devices[0].Ports[0].GIDs {
		past, ok := g["index_past_255"]
		if want := g["index"].(float64) > 255; want != (past == true) || !want && ok {
			t.Errorf("GID %v: index_past_255 %v (present %v), want it %v", g["index"], past, ok, want)
		}
	}
}
