//go:build linux && cgo

package cli

import (
	"errors"
	"fmt"

	"github.com/gorperf/gorperf/ibverbs"
)

// gatherDevices queries the named RDMA device, or every one when name is
// "". No devices at all is an empty list, not an error. A device or port
// that cannot be queried is reported with its error rather than failing the
// whole list; an unknown name is an error.
func gatherDevices(name string) ([]deviceReport, error) {
	infos, err := ibverbs.Devices()
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, nil
	}
	var out []deviceReport
	for _, info := range infos {
		if name != "" && info.Name != name {
			continue
		}
		out = append(out, gatherDevice(info))
	}
	if name != "" && len(out) == 0 {
		// Let Open explain: its error lists the devices there are.
		ctx, err := ibverbs.Open(name)
		if err == nil {
			ctx.Close()
			return nil, fmt.Errorf("device %s appeared while listing: try again", name)
		}
		return nil, err
	}
	return out, nil
}

func gatherDevice(info ibverbs.DeviceInfo) deviceReport {
	d := deviceReport{
		Name:      info.Name,
		NodeGUID:  info.GUIDString(),
		NodeType:  info.NodeType.String(),
		Transport: info.Transport.String(),
		NUMANode:  info.NUMANode,
	}
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	defer ctx.Close()
	da, err := ctx.QueryDevice()
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.FWVer = da.FWVer
	for port := 1; port <= da.PhysPortCnt; port++ {
		d.Ports = append(d.Ports, gatherPort(ctx, port))
	}
	return d
}

func gatherPort(ctx *ibverbs.Context, port int) portReport {
	p := portReport{Port: port}
	pa, err := ctx.QueryPort(port)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.State = pa.State.String()
	p.PhysState = pa.PhysStateString()
	p.ActiveMTU = pa.ActiveMTU.Bytes()
	p.MaxMTU = pa.MaxMTU.Bytes()
	p.LinkLayer = pa.LinkLayer.String()
	p.Gbps = pa.Gbps()
	p.Lanes = pa.Lanes()
	p.LID = pa.LID
	table, err := ctx.GIDTable(port)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	for _, e := range table {
		g := gidReport{Index: e.Index, GID: e.GID.String(), Type: e.Type.String(), Netdev: e.Netdev,
			AddrFlags: e.AddrFlags.String(), MappedIPv6: e.MappedIPv6}
		if e.Type != ibverbs.GIDTypeIB {
			g.IP = e.IP().String()
		}
		p.GIDs = append(p.GIDs, g)
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		return p
	}
	ch, err := ibverbs.SelectGID(table, ibverbs.GIDRule{})
	var nog *ibverbs.NoGIDError
	switch {
	case err == nil:
		p.DefaultGID = &gidChoice{Index: ch.Entry.Index, Reason: ch.Reason}
		for _, t := range ch.Tied {
			p.DefaultGID.Tied = append(p.DefaultGID.Tied, t.Index)
		}
	case errors.As(err, &nog):
		p.NoGIDReason = err.Error()
	default:
		p.Error = err.Error()
	}
	return p
}
