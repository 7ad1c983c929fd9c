//go:build linux && cgo

package ibverbs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

func TestPortGbps(t *testing.T) {
	tests := []struct {
		name    string
		width   uint8
		speed   uint8
		speedEx uint32
		want    float64
	}{
		{"SDR 1x", 1, 1, 0, 2.5},
		{"EDR 4x", 2, 32, 0, 103.125},
		{"HDR 2x", 16, 64, 0, 106.25},
		{"NDR 4x", 2, 128, 0, 425},
		{"NDR 4x, active_speed_ex too", 2, 128, 128, 425},
		// An XDR port: active_speed says NDR, active_speed_ex XDR.
		{"XDR 4x", 2, 128, 256, 850},
		{"XDR 8x", 4, 128, 256, 1700},
		{"XDR 1x", 1, 128, 256, 212.5},
		{"unknown speed", 2, 3, 0, 0},
		{"unknown width", 3, 32, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ibverbs.PortAttr{ActiveWidth: tt.width, ActiveSpeed: tt.speed, ActiveSpeedEx: tt.speedEx}
			if got := p.Gbps(); got != tt.want {
				t.Errorf("Gbps() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPortSpeedMatchesSysfs checks the port's width and speed codes
// against the kernel's own reading of them, the port's sysfs rate
// ("100 Gb/sec (4X EDR)").
func TestPortSpeedMatchesSysfs(t *testing.T) {
	info, ctx := openTestDevice(t)
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/rate", info.Name, info.Port))
	if err != nil {
		t.Fatal(err)
	}
	rate := strings.TrimSpace(string(b))
	i, j := strings.LastIndexByte(rate, '('), strings.LastIndexByte(rate, ')')
	if i < 0 || j < i {
		t.Fatalf("sysfs rate %q: no (width speed)", rate)
	}
	var lanes int
	var name string
	if n, _ := fmt.Sscanf(strings.Replace(rate[i+1:j], "X", " ", 1), "%d %s", &lanes, &name); n < 1 {
		t.Fatalf("sysfs rate %q: no width", rate)
	}
	if name == "" {
		name = "SDR" // the kernel names no speed for SDR
	}
	code := map[string]uint32{"SDR": 1, "DDR": 2, "QDR": 4, "FDR10": 8, "FDR": 16, "EDR": 32, "HDR": 64, "NDR": 128, "XDR": 256}[name]
	t.Logf("sysfs rate %q; active_width %d active_speed %d active_speed_ex %d: %v lanes, %v Gbit/s",
		rate, pa.ActiveWidth, pa.ActiveSpeed, pa.ActiveSpeedEx, pa.Lanes(), pa.Gbps())
	if code == 256 && pa.ActiveSpeedEx == 0 {
		t.Skipf("an XDR port, which this libibverbs (older than rdma-core 49) or kernel reports as NDR")
	}
	if pa.Lanes() != lanes || pa.Speed() != code || pa.Gbps() == 0 {
		t.Errorf("port %d: %d lanes, speed %d, %v Gbit/s; sysfs rate %q says %d lanes of %s (%d)",
			info.Port, pa.Lanes(), pa.Speed(), pa.Gbps(), rate, lanes, name, code)
	}
	if pa.ActiveSpeedEx != 0 && pa.ActiveSpeed < 128 && uint32(pa.ActiveSpeed) != pa.ActiveSpeedEx {
		t.Errorf("active_speed %d, active_speed_ex %d", pa.ActiveSpeed, pa.ActiveSpeedEx)
	}
}
