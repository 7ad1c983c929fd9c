package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCarriedMTU: the largest RDMA MTU a netdev MTU carries with the
// driver's headers, within the port's largest.
func TestCarriedMTU(t *testing.T) {
	for _, tc := range []struct{ mtu, overhead, most, want int }{
		{1500, RoCEOverhead, 4096, 1024},
		{9000, RoCEOverhead, 4096, 4096},
		{9000, RoCEOverhead, 2048, 2048},
		{4192, RoCEOverhead, 4096, 4096},
		{4191, RoCEOverhead, 4096, 2048},
		{4176, RXEOverhead, 4096, 4096},
		{700, RXEOverhead, 4096, 512},
		{700, RoCEOverhead, 1024, 512},
		{592, RXEOverhead, 4096, 512},
		{591, RXEOverhead, 4096, 256},
		{300, RXEOverhead, 4096, 0},
	} {
		if got := CarriedMTU(tc.mtu, tc.overhead, tc.most); got != tc.want {
			t.Errorf("CarriedMTU(%d, %d, %d) = %d, want %d", tc.mtu, tc.overhead, tc.most, got, tc.want)
		}
	}
	if MTUOverhead(true) != 80 || MTUOverhead(false) != 96 {
		t.Errorf("MTUOverhead: rxe %d, others %d; want 80 and 96", MTUOverhead(true), MTUOverhead(false))
	}
}

func TestNetdevMTU(t *testing.T) {
	root := t.TempDir()
	write := func(nd, mtu string) {
		d := filepath.Join(root, "sys/class/net", nd)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "mtu"), []byte(mtu), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rxeveth0.10", "700\n")
	write("junk0", "x\n")
	if m, err := NetdevMTU(root, "rxeveth0.10"); m != 700 || err != nil {
		t.Errorf("rxeveth0.10: %d, %v; want 700", m, err)
	}
	if _, err := NetdevMTU(root, "junk0"); err == nil || !strings.Contains(err.Error(), `"x" is not a number`) {
		t.Errorf("junk0: %v", err)
	}
	if _, err := NetdevMTU(root, "none0"); !os.IsNotExist(err) {
		t.Errorf("none0: %v, want not exist", err)
	}
}
