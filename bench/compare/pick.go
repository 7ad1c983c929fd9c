//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// pick is where the two sides run when no device is named: a server and a
// client port, each with the RoCE v2 GID index gorperf selects and its IPv4
// address.
type pick struct {
	serverDev, clientDev string
	serverGID, clientGID int
	addr                 string // the server's address
	why                  string
}

// devicesDoc is the part of `gorperf devices --json` (schema_version 1)
// that pickPorts reads.
type devicesDoc struct {
	SchemaVersion int `json:"schema_version"`
	Devices       []struct {
		Name  string `json:"name"`
		Ports []struct {
			Port       int    `json:"port"`
			State      string `json:"state"`
			LinkLayer  string `json:"link_layer"`
			DefaultGID *struct {
				Index int `json:"index"`
			} `json:"default_gid"`
			GIDs []struct {
				Index int    `json:"index"`
				IP    string `json:"ip"`
			} `json:"gids"`
		} `json:"ports"`
	} `json:"devices"`
}

// pickPorts chooses, from gorperf's device report, the first two devices
// whose port 1 is active with a default RoCE v2 GID that has an IPv4
// address: the first serves, the second is the client. With one such
// device both sides use it, and traffic loops back through its port.
// perftest's tools are run without -i, so only port 1 counts.
func pickPorts(report []byte) (pick, error) {
	var doc devicesDoc
	if err := json.Unmarshal(report, &doc); err != nil {
		return pick{}, fmt.Errorf("reading gorperf devices --json: %w", err)
	}
	if doc.SchemaVersion != 1 {
		return pick{}, fmt.Errorf("gorperf devices --json: schema_version %d, want 1", doc.SchemaVersion)
	}
	type side struct {
		dev  string
		gid  int
		addr string
	}
	var found []side
	var passed []string
	for _, d := range doc.Devices {
		ok := false
		for _, p := range d.Ports {
			if p.Port != 1 {
				continue
			}
			switch {
			case p.State != "ACTIVE":
				passed = append(passed, fmt.Sprintf("%s: port 1 is %s", d.Name, p.State))
			case p.DefaultGID == nil:
				passed = append(passed, fmt.Sprintf("%s: no RoCE v2 GID", d.Name))
			default:
				for _, g := range p.GIDs {
					if g.Index == p.DefaultGID.Index && strings.Count(g.IP, ".") == 3 {
						found = append(found, side{d.Name, g.Index, g.IP})
						ok = true
					}
				}
				if !ok {
					passed = append(passed, fmt.Sprintf("%s: the RoCE v2 GID has no IPv4 address", d.Name))
				}
			}
		}
	}
	if len(found) == 0 {
		return pick{}, fmt.Errorf("no device with an active port 1 and a RoCE v2 GID over IPv4 (%s)", strings.Join(passed, "; "))
	}
	srv, cli := found[0], found[0]
	why := fmt.Sprintf("one usable device, %s: server and client share it, traffic loops back through its port", srv.dev)
	if len(found) > 1 {
		cli = found[1]
		why = fmt.Sprintf("server on %s, client on %s: the first two devices with an active port 1 and a RoCE v2 GID over IPv4", srv.dev, cli.dev)
	}
	if len(passed) > 0 {
		why += "; passed over: " + strings.Join(passed, "; ")
	}
	return pick{srv.dev, cli.dev, srv.gid, cli.gid, srv.addr, why}, nil
}

// pickFromGorperf runs `gorperf devices --json` and picks from its report.
func pickFromGorperf(gorperf string) (pick, error) {
	out, err := exec.Command(gorperf, "devices", "--json").Output()
	if err != nil {
		return pick{}, fmt.Errorf("%s devices --json: %w", gorperf, err)
	}
	return pickPorts(out)
}
