package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gorperf/gorperf/internal/report"
)

// devicesSchemaVersion is the version of `gorperf devices --json`'s
// document. Bump it when a field changes meaning or goes away; adding a
// field does not bump it.
const devicesSchemaVersion = 1

// DevicesOptions are the options of `gorperf devices`.
type DevicesOptions struct {
	IO      *IOStreams
	Devices func(name string) ([]deviceReport, error)
	Device  string // -d: only this device
	JSON    bool   // --json
}

// devicesDoc is the --json document. One that failed (an unknown -d, no
// devices at all) has no devices and the error, as a test's document
// has it: {"code": ..., "message": ...}.
type devicesDoc struct {
	SchemaVersion int `json:"schema_version"`
	// Tool and Version are as a test's document has them: "gorperf"
	// and its version.
	Tool    string         `json:"tool"`
	Version string         `json:"version"`
	Devices []deviceReport `json:"devices"`
	Error   *report.Error  `json:"error,omitempty"`
}

// deviceReport is what gorperf knows of one RDMA device. Gathering it
// (gather.go) is kept apart from printing it, which tests drive with
// made-up devices.
type deviceReport struct {
	Name      string       `json:"name"`
	NodeGUID  string       `json:"node_guid"`
	NodeType  string       `json:"node_type"`
	Transport string       `json:"transport"`
	FWVer     string       `json:"fw_ver,omitempty"`
	NUMANode  int          `json:"numa_node"` // -1: none
	Ports     []portReport `json:"ports"`
	Error     string       `json:"error,omitempty"` // why the device could not be queried
}

type portReport struct {
	Port      int         `json:"port"`
	State     string      `json:"state"`
	PhysState string      `json:"phys_state"`
	ActiveMTU int         `json:"active_mtu"`
	MaxMTU    int         `json:"max_mtu"`
	LinkLayer string      `json:"link_layer"`
	Gbps      float64     `json:"speed_gbps"`
	Lanes     int         `json:"lanes"`
	LID       uint16      `json:"lid,omitempty"`
	GIDs      []gidReport `json:"gids"`
	// DefaultGID is the entry SelectGID picks with the default rule, nil
	// when it finds none (then NoGIDReason says why) or on InfiniBand. A
	// test with no GID flag uses it only where its control connection's
	// local address has no GID on the port; else that address's GID.
	DefaultGID  *gidChoice `json:"default_gid"`
	NoGIDReason string     `json:"no_gid_reason,omitempty"`
	Error       string     `json:"error,omitempty"`
}

type gidReport struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type"`
	Netdev string `json:"netdev,omitempty"`
	IP     string `json:"ip,omitempty"`
	// AddrFlags names the flags of the netdev's address that the GID is
	// of, which selection heeds ("deprecated", "tentative dadfailed").
	AddrFlags string `json:"addr_flags,omitempty"`
	// MappedIPv6 marks an IPv4-mapped GID whose address the netdev has
	// as IPv6 (::ffff:a.b.c.d), which RoCE v2 cannot route from.
	MappedIPv6 bool `json:"mapped_ipv6,omitempty"`
	// IndexPast255 marks an entry past index 255, which no test can use:
	// the verbs' GID index (sgid_index) is 8 bits. GID selection passes
	// over it, and -x cannot name it. writeDevicesJSON sets it.
	IndexPast255 bool `json:"index_past_255,omitempty"`
}

// maxGIDIndex is ibverbs.MaxGIDIndex, the highest GID index that a QP can
// use, which this file, built without cgo too, cannot import.
const maxGIDIndex = 255

// note is what the text table adds to the entry's IP: its address
// flags, or that its address is IPv6.
func (g gidReport) note() string { return parenthesize(g.addrNotes()) }

// addrNotes are note's words.
func (g gidReport) addrNotes() []string {
	var p []string
	if g.AddrFlags != "" {
		p = append(p, g.AddrFlags)
	}
	if g.MappedIPv6 {
		p = append(p, "IPv6 ::ffff:"+g.IP)
	}
	return p
}

// tableNote is note, and that the entry is past index 255, where no test
// can use it.
func (g gidReport) tableNote() string {
	p := g.addrNotes()
	if g.Index > maxGIDIndex {
		p = append(p, "past index 255: unusable")
	}
	return parenthesize(p)
}

// parenthesize joins p in parentheses after a space: " (a, b)"; "" for
// none.
func parenthesize(p []string) string {
	if len(p) == 0 {
		return ""
	}
	return " (" + strings.Join(p, ", ") + ")"
}

type gidChoice struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
	// Tied holds the indexes of the other entries that ranked as this
	// one did and lost only for their higher index.
	Tied []int `json:"tied,omitempty"`
}

func newCmdDevices(f *Factory, runF func(*DevicesOptions) error) *cobra.Command {
	opts := &DevicesOptions{IO: f.IO, Devices: f.Devices}
	cmd := &cobra.Command{
		Use:   "devices [-d DEV] [--json]",
		Short: "List RDMA devices, their ports and GID tables",
		Long: `List every RDMA device with its node GUID, node type and transport, and for
each port its state, MTU, link layer, speed and GID table. The GID marked
with * is the port's default, with the reason. A test given no GID flag
(-x, --source_ip, --bind_source_ip, --gid-*, or --ipv6 over an IPv4 control
connection) takes the GID of its control connection's local address where
the port has one, and the default only where it has none: a control
connection over loopback (as loopback's is) or over another NIC.
An entry past index 255 is marked unusable: the verbs' GID index
(sgid_index) is 8 bits, so no test can use it, and -x cannot name it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return devicesRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Device, "ib-dev", "d", "", "only this RDMA device (e.g. mlx5_0, rxe0)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON document (schema_version 1)")
	return cmd
}

func devicesRun(opts *DevicesOptions) error {
	devs, err := opts.Devices(opts.Device)
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return errNoDevices
	}
	if opts.JSON {
		return writeDevicesJSON(opts.IO.Out, devs)
	}
	return writeDevicesText(opts.IO.Out, devs)
}

var errNoDevices = errors.New("no RDMA devices found: " + noDevicesFix)

func writeDevicesJSON(w io.Writer, devs []deviceReport) error {
	for i := range devs { // [] rather than null, so consumers need not care
		if devs[i].Ports == nil {
			devs[i].Ports = []portReport{}
		}
		for j := range devs[i].Ports {
			if devs[i].Ports[j].GIDs == nil {
				devs[i].Ports[j].GIDs = []gidReport{}
			}
			for k := range devs[i].Ports[j].GIDs {
				g := &devs[i].Ports[j].GIDs[k]
				g.IndexPast255 = g.Index > maxGIDIndex
			}
		}
	}
	return encodeIndented(w, devicesDoc{SchemaVersion: devicesSchemaVersion, Tool: report.Tool, Version: Version, Devices: devs})
}

// encodeIndented writes v as JSON indented by two spaces: the documents
// of gorperf devices --json and doctor --json.
func encodeIndented(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func writeDevicesText(w io.Writer, devs []deviceReport) error {
	var b strings.Builder
	for i, d := range devs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s  node GUID %s  %s, transport %s", d.Name, d.NodeGUID, d.NodeType, d.Transport)
		if d.FWVer != "" {
			fmt.Fprintf(&b, ", firmware %s", d.FWVer)
		}
		if d.NUMANode >= 0 {
			fmt.Fprintf(&b, ", NUMA node %d", d.NUMANode)
		}
		b.WriteByte('\n')
		if d.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", d.Error)
		}
		for _, p := range d.Ports {
			writePortText(&b, p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writePortText(b *strings.Builder, p portReport) {
	fmt.Fprintf(b, "  port %d: %s (%s), %s, MTU %d active / %d max, %s",
		p.Port, p.State, p.PhysState, p.LinkLayer, p.ActiveMTU, p.MaxMTU, speedString(p.Gbps, p.Lanes))
	if p.LinkLayer == "InfiniBand" {
		fmt.Fprintf(b, ", LID %d", p.LID)
	}
	b.WriteByte('\n')
	if p.Error != "" {
		fmt.Fprintf(b, "    error: %s\n", p.Error)
		return
	}
	if len(p.GIDs) == 0 {
		b.WriteString("    GID table empty\n")
	} else {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "      INDEX\tGID\tTYPE\tNETDEV\tIP")
		for _, g := range p.GIDs {
			mark := " "
			if p.DefaultGID != nil && p.DefaultGID.Index == g.Index {
				mark = "*"
			}
			fmt.Fprintf(tw, "    %s %d\t%s\t%s\t%s\t%s\n", mark, g.Index, g.GID, g.Type, dash(g.Netdev), dash(g.IP)+g.tableNote())
		}
		tw.Flush()
	}
	switch {
	case p.DefaultGID != nil:
		fmt.Fprintf(b, "    default GID: index %d, %s; %s\n", p.DefaultGID.Index, p.DefaultGID.Reason, defaultGIDUse)
	case p.NoGIDReason != "":
		fmt.Fprintf(b, "    default GID: none: %s\n", p.NoGIDReason)
	}
}

// defaultGIDUse says when a test uses a port's default GID, as devices
// and doctor follow it: a test with no GID flag takes its control
// connection's local address's GID where the port has one (the peer
// reached it there, bench's controlGID), else the default.
const defaultGIDUse = "a test with no GID flag uses it only where its control connection's local address has no GID on this port"

// speedString formats a port's signalling rate (PortAttr.Gbps) and width:
// "103.125 Gb/s (4X)".
func speedString(gbps float64, lanes int) string {
	if gbps == 0 || lanes == 0 {
		return "speed unknown"
	}
	return fmt.Sprintf("%g Gb/s (%dX)", gbps, lanes)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
