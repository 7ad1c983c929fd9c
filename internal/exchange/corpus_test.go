package exchange

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the seed corpus in testdata/fuzz")

type seed struct {
	name string
	b    []byte
}

// smallMessages are the test messages small enough for a seed file.
func smallMessages() []struct {
	name string
	m    Message
} {
	var out []struct {
		name string
		m    Message
	}
	for _, tc := range messages() {
		if b, _ := AppendFrame(nil, tc.m); len(b) <= 1024 {
			out = append(out, tc)
		}
	}
	return out
}

func payloadSeeds[T Message]() []seed {
	var seeds []seed
	var typ MsgType
	for _, tc := range smallMessages() {
		if m, ok := tc.m.(T); ok {
			typ = m.Type()
			p := m.AppendPayload(nil)
			seeds = append(seeds, seed{tc.name, p},
				seed{tc.name + " trailing", append(bytes.Clone(p), 0)},
				seed{tc.name + " short", p[:len(p)-1]})
		}
	}
	if typ == TypeSetup {
		// A count that promises more than the bytes hold, and than the bound.
		seeds = append(seeds, seed{"count 1024 empty", []byte{0x04, 0x00}}, seed{"count 65535", []byte{0xff, 0xff}})
	}
	return seeds
}

func frameSeeds() []seed {
	var seeds []seed
	for _, tc := range smallMessages() {
		b, _ := AppendFrame(nil, tc.m)
		seeds = append(seeds, seed{tc.name, b})
	}
	return append(seeds,
		seed{"perftest", []byte("0000:000011:9f1c3a:00000000:0000000000000000")},
		seed{"reserved", []byte{byte(TypeSync), 1, 0, 4, 0, 0, 0, 0}},
		seed{"huge length", []byte{byte(TypeSetup), 0, 0xff, 0xff, 0, 0}},
	)
}

// streamSeeds are whole conversations, as one side receives them.
func streamSeeds() []seed {
	var session []byte
	for _, m := range []Message{NewHello("gorperf 0.1.0"), testSpec(),
		Setup{QPs: []QPInfo{{Endpoint: fullEndpoint(), RKey: 1, Addr: 2, Len: 3}}},
		Sync{Seq: 1}, Result{Iterations: 1}} {
		session, _ = AppendFrame(session, m)
	}
	refused, _ := AppendFrame(nil, NewHello("gorperf 0.1.0"))
	refused, _ = AppendFrame(refused, ErrorMsg{Code: CodeOverLimit, Text: "too many QPs"})
	return []seed{
		{"session", session},
		{"refused", refused},
		{"cut", session[:len(session)/2]},
		{"perftest", []byte("0000:000011:9f1c3a:00000000:0000000000000000")},
		{"empty", nil},
	}
}

// corpus maps each fuzz target to its seeds.
func corpus() map[string][]seed {
	return map[string][]seed{
		"FuzzDecodeHello":  payloadSeeds[Hello](),
		"FuzzDecodeSpec":   payloadSeeds[TestSpec](),
		"FuzzDecodeSetup":  payloadSeeds[Setup](),
		"FuzzDecodeSync":   payloadSeeds[Sync](),
		"FuzzDecodeResult": payloadSeeds[Result](),
		"FuzzDecodeError":  payloadSeeds[ErrorMsg](),
		"FuzzDecodeFrame":  frameSeeds(),
		"FuzzRecv":         streamSeeds(),
	}
}

// corpusFile is a seed in the `go test fuzz v1` format.
func corpusFile(b []byte) string {
	return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
}

// TestSeedCorpus checks the seed files in testdata/fuzz against corpus();
// go test -run TestSeedCorpus -update rewrites them. Files the fuzzer
// adds (crashers) are left alone.
func TestSeedCorpus(t *testing.T) {
	for target, seeds := range corpus() {
		dir := filepath.Join("testdata", "fuzz", target)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
			for _, f := range old {
				os.Remove(f)
			}
		}
		for _, s := range seeds {
			path := filepath.Join(dir, "seed-"+strings.ReplaceAll(s.name, " ", "-"))
			want := corpusFile(s.b)
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != want {
				t.Errorf("%s is missing or stale; run go test -run TestSeedCorpus -update", path)
			}
		}
	}
}
