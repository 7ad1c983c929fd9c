//go:build linux && cgo

package cli

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorperf/gorperf/internal/exchange"
)

// flagError is every command's answer to a flag it cannot parse: a usage
// error, which for a flag the command lacks also says where the flag
// belongs: to other gorperf tests, or to perftest alone, and then what
// gorperf offers instead. A perftest command line carried over should not
// end in a bare "unknown flag".
func flagError(cmd *cobra.Command, err error) error {
	// A command that only holds others (gorperf, loopback) parses the
	// flags cobra finds no subcommand for: when a word came before them,
	// that word is the mistake (`gorperf loopback wirte-bw -d x`).
	if cmd.HasSubCommands() && cmd.Flags().NArg() > 0 {
		return unknownSubcommand(cmd, cmd.Flags().Arg(0))
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if c, testOnly := ambiguousPrefix(cmd, ne); c != nil {
			err := fmt.Errorf("option '--%s' is ambiguous; possibilities: --%s", ne.GetSpecifiedName(), strings.Join(c, " --"))
			if len(testOnly) > 0 {
				err = fmt.Errorf("%w; %s", err, serveTestFlag(testOnly[0], false))
			}
			return &usageError{err}
		}
		if why := explainUnknownFlag(cmd, ne); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
	}
	return &usageError{err}
}

// ambiguousPrefix returns the flags of cmd that the long flag ne names
// is a prefix of, where it is a prefix of more than one, as perftest's
// getopt_long calls it ambiguous; else nil. (A unique prefix is the flag
// it begins, perftestNames.) For serve they include the tests' flags it
// begins that serve lacks, also returned alone as testOnly (serve --bi:
// --bind_source_ip and a test's --bidirectional). A name that is exactly
// a test's flag or perftest's option is no prefix: explainUnknownFlag
// says where it belongs.
func ambiguousPrefix(cmd *cobra.Command, ne *pflag.NotExistError) (c, testOnly []string) {
	if _, err := exchange.ParseTest(strings.ReplaceAll(cmd.Name(), "-", "_")); (err != nil && cmd.Name() != "serve") || ne.GetSpecifiedShortnames() != "" {
		return nil, nil // a command without perftestNames, or letters
	}
	name := ne.GetSpecifiedName()
	if knownFlagName(name) {
		return nil, nil
	}
	c = prefixFlags(cmd.Flags(), name)
	if cmd.Name() == "serve" {
		testOnly = testOnlyPrefixFlags(cmd.Flags(), name)
		c = append(c, testOnly...)
		slices.Sort(c)
	}
	if len(c) > 1 {
		return c, testOnly
	}
	return nil, nil
}

// explainUnknownFlag says where the flag ne names belongs, or "" if
// gorperf knows nothing of it.
func explainUnknownFlag(cmd *cobra.Command, ne *pflag.NotExistError) string {
	name, short := ne.GetSpecifiedName(), ne.GetSpecifiedShortnames() != ""
	if _, err := exchange.ParseTest(strings.ReplaceAll(cmd.Name(), "-", "_")); err == nil {
		if why := otherTestsFlag(cmd, name, short); why != "" {
			return why
		}
	} else if cmd.Name() != "serve" {
		return ""
	} else if why := serveTestFlag(name, short); why != "" {
		return why
	}
	long := name
	if why, ok := perftestLetterOnly[name]; short && ok {
		return why
	}
	if short {
		if long = perftestShort[name]; long == "" {
			return ""
		}
	}
	why, ok := perftestOnly[strings.ReplaceAll(long, "-", "_")]
	if !ok {
		return ""
	}
	if short {
		return fmt.Sprintf("perftest's -%s, --%s %s", name, long, why)
	}
	return "perftest's --" + long + " " + why
}

// otherTestsFlag names the tests that have the flag cmd, a test command,
// lacks, or returns "".
func otherTestsFlag(cmd *cobra.Command, name string, short bool) string {
	loopback := cmd.HasParent() && cmd.Parent().Name() == "loopback"
	var have []string
	var flag *pflag.Flag // the flag in the last of them
	for t := exchange.WriteBW; t <= exchange.AtomicLat; t++ {
		f := newCmdTest(nil, t, loopback, nil).Flags()
		fl := f.Lookup(name)
		if short {
			fl = f.ShorthandLookup(name)
		}
		if fl != nil {
			have, flag = append(have, testCmdName(t)), fl
		}
	}
	if flag == nil {
		return ""
	}
	if short {
		return fmt.Sprintf("-%s is --%s, which only %s have", name, flag.Name, joinAnd(have))
	}
	why := "only " + joinAnd(have) + " have it"
	if note := perftestIgnores[testFlag{cmd.Name(), flag.Name}]; note != "" {
		why += "; " + note
	}
	return why
}

// testFlag is a test command's name and the name of a flag.
type testFlag struct{ test, flag string }

// perftestIgnores says of a flag that a gorperf test refuses, where the
// same perftest test accepts it and does nothing with it, that leaving
// it out changes nothing.
var perftestIgnores = map[testFlag]string{
	{"send-bw", "perform_warm_up"}: "perftest's ib_send_bw accepts it and does nothing with it (it warms up no send test), so leaving it out changes nothing",
}

// serveReportFlags are the tests' flags of what a side reports that a
// server for one test takes and gorperf serve does not, which reports
// each test in text or, with --json, as a JSON document ("report"), and
// judges no pass marks ("limit").
var serveReportFlags = map[string]string{
	"csv": "report", "output": "report", "report_gbits": "report", "out_json": "report", "out_json_file": "report",
	"report-unsorted": "report", "report-histogram": "report", "histogram": "report", "report-both": "report",
	"limit_bw": "limit", "limit_msgrate": "limit", "limit_lat": "limit", "limit_p99": "limit",
}

// serveTestFlag explains a flag that the tests have and gorperf serve
// lacks, named as given (short: a letter), or returns "" for one no test
// has. Most set the test, which serve takes from each client's command
// line, as a perftest server does (-s, -n, -q, -b, --threads, ...); the
// others choose what a side reports (serveReportFlags).
func serveTestFlag(name string, short bool) string {
	var fl *pflag.Flag
	for t := exchange.WriteBW; t <= exchange.AtomicLat && fl == nil; t++ {
		f := newCmdTest(nil, t, false, nil).Flags()
		if short {
			fl = f.ShorthandLookup(name)
		} else {
			fl = f.Lookup(name)
		}
	}
	if fl == nil {
		return ""
	}
	given := "--" + name
	if short {
		given = "-" + name
	}
	oneTest := "a server for one test (gorperf write-bw, say, without an address) takes it"
	switch serveReportFlags[fl.Name] {
	case "report":
		return fmt.Sprintf("serve takes no %s: it reports each test in text, or with --json as a JSON document; %s", given, oneTest)
	case "limit":
		return fmt.Sprintf("serve takes no %s: it judges no pass marks (a client's judges the client's figures); %s", given, oneTest)
	}
	return fmt.Sprintf("serve takes no test flags (%s): each client's test sets them; give them to the client", given)
}

// joinAnd joins words as a list in prose: "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// perftestShort maps the letters of perftest's flags that gorperf lacks
// to their long names.
var perftestShort = map[string]string{
	"z": "comm_rdma_cm", "L": "hop_limit", "O": "dualport", "B": "source_mac", "E": "dest_mac",
	"J": "dest_ip", "K": "dest_port", "k": "source_port", "Y": "ethertype", "Z": "server",
	"P": "client", "v": "mac_fwd", "G": "use_rss",
}

// perftestLetterOnly explains the letters of perftest's flags whose long
// name gorperf gives a flag of its own, which perftestShort cannot map.
var perftestLetterOnly = map[string]string{
	"j": "perftest's -j, --source_ip " + rawEthernet + "; gorperf's own --source_ip, a test's flag with no letter, picks the GID of a local address for the QPs",
}

// The reasons perftest's flags that gorperf does not offer are left out.
const (
	rawEthernet = "belongs to perftest's raw Ethernet tests (ib_raw_ethernet_*), which gorperf does not have: it measures RDMA over QPs of type RC, UC and UD"
	accelerator = "puts the buffer in accelerator or device memory, which gorperf does not offer: its buffers are host memory (anonymous pages, --use_hugepages, or a file's pages with --mmap)"
	mlx5Only    = "uses a vendor's direct-verbs extension (mlx5dv or hnsdv), which gorperf does not offer: it keeps to libibverbs' portable verbs"
	tph         = "sets PCIe TLP processing hints for the buffer's memory region (ibv_reg_mr_ex), which gorperf does not offer: the rdma-core it is built and tested against (44) has no such verb; --pin_cores and --numa_node place the CPUs"
)

// perftestOnly holds perftest's flags that gorperf does not offer, by long
// name with '_' for '-', and why.
var perftestOnly = map[string]string{
	"odp":                     "(on-demand paging instead of registering the buffer) is not offered: the soft-RoCE device gorperf is tested on has no ODP on the kernels it runs, so it could not be shown to work; registered memory, with --use_hugepages or --mmap, is what gorperf measures",
	"dualport":                "(both ports of a device at once) is not offered: gorperf tests one port; run a gorperf pair for each port (-i 1, -i 2) at the same time",
	"report_per_port":         "(dual-port reports) is not offered: gorperf tests one port; run a gorperf pair for each port (-i)",
	"comm_rdma_cm":            "(the test's parameters exchanged over rdma_cm) is not offered: gorperf exchanges them over its TCP control connection; -R connects the QPs through rdma_cm",
	"com_rdma_cm":             "(the spelling of perftest's help; perftest itself takes --comm_rdma_cm) is not offered: gorperf exchanges the test's parameters over its TCP control connection; -R connects the QPs through rdma_cm",
	"data_validation_debug":   "(perftest's dumps of the data it validates) is not offered: gorperf's --validate, which perftest 26.04 calls --data_validation, says how many QPs received bytes that were not sent and fails the run",
	"cqe_poll":                "(completions taken a poll) is not offered: gorperf's loops take up to 64 completions a poll and post all the room they open in one call, a batch with nothing to tune",
	"disable_dynamic_polling": "is not offered: gorperf does not adapt how many completions it polls for (up to 64 a call), so there is nothing to disable",
	"connectionless":          "(a multicast receiver with no control connection) is not offered: gorperf's -g sides learn each other's groups over the control connection; run a gorperf -g pair",
	"unsolicited_write":       "(receives for writes with immediate data on EFA's SRD) is not offered: it is an EFA direct-verbs (efadv) feature, and gorperf keeps to libibverbs' portable verbs and QP types",
	"sig_offload":             mlx5Only,
	"no_enhanced_reorder":     mlx5Only,
	"tph_mem":                 tph,
	"cpu_id":                  tph,
	"ph":                      tph,
	"inline_recv":             "(data received into the receive queue's own entries) is not offered: it needs the experimental verbs of Mellanox OFED (ibv_exp_*), which upstream rdma-core, and so gorperf, does not have",
	"dont_xchg_versions":      "is not offered: gorperf's control protocol always checks that both sides speak the same version, and exchanges the MTU",
	"force_link":              "is not offered: gorperf takes the link layer (InfiniBand or Ethernet) from the port itself, as ibv_query_port reports it",
	"dlid":                    "(a destination LID given instead of exchanged) is not offered: gorperf learns the peer's LID and GID from the control connection",
	"wait_destroy":            "(a pause before the resources are freed) is not offered: gorperf frees them when the test ends; to inspect them (rdma resource show, say) while they exist, run the test with -D or --run_infinitely",
	"no_lock":                 "(lock-free QPs and CQs through thread and parent domains, ibv_alloc_td and ibv_alloc_parent_domain) is not offered: soft-RoCE, on which gorperf is tested, has neither verb. gorperf's CQs are made single-threaded where the device allows (mlx5 then polls them without a lock); for mlx5's QPs too, run with MLX5_SINGLE_THREADED=1, which drops its locks for the whole process",
	"use_null_mr":             "(ibv_alloc_null_mr) is not offered: only mlx5 implements null memory regions, and gorperf keeps to what every provider does",
	"use_ooo":                 mlx5Only,
	"congest_type":            mlx5Only,
	"log_dci_streams":         mlx5Only,
	"log_active_dci_streams":  mlx5Only,
	"aes_xts":                 mlx5Only,
	"encrypt_on_tx":           mlx5Only,
	"sig_before":              mlx5Only,
	"aes_block_size":          mlx5Only,
	"kek_path":                mlx5Only,
	"credentials_path":        mlx5Only,
	"data_enc_keys_number":    mlx5Only,
	"data_enc_key_app_path":   mlx5Only,
	"hop_limit":               rawEthernet,
	"source_mac":              rawEthernet,
	"dest_mac":                rawEthernet,
	"dest_ip":                 rawEthernet,
	"dest_port":               rawEthernet,
	"source_port":             rawEthernet,
	"ethertype":               rawEthernet,
	"server":                  rawEthernet,
	"client":                  rawEthernet,
	"mac_fwd":                 rawEthernet,
	"use_rss":                 rawEthernet,
	"remote_mac":              rawEthernet,
	"local_mac":               rawEthernet,
	"remote_ip":               rawEthernet,
	"local_ip":                rawEthernet,
	"remote_port":             rawEthernet,
	"local_port":              rawEthernet,
	"tcp":                     rawEthernet,
	"typical_pkt_size":        "(the packet size of a burst of its PP rate limiter) is not offered: it only works with perftest's hardware packet-pacing rate limiter (--rate_limit_type PP), which needs a NIC's rate tables; gorperf's --rate_limit is kept by its sending loop (--rate_limit_type SW), with --burst_size for the bursts",
	"raw_ipv6":                rawEthernet,
	"promiscuous":             rawEthernet,
	"sniffer":                 rawEthernet,
	"raw_mcast":               rawEthernet,
	"flows":                   rawEthernet,
	"flows_burst":             rawEthernet,
	"reply_every":             rawEthernet,
	"vlan_en":                 rawEthernet,
	"vlan_pcp":                rawEthernet,
	"use_cuda":                accelerator,
	"use_cuda_bus_id":         accelerator,
	"use_cuda_dmabuf":         accelerator,
	"use_cuda_pcie_mapping":   accelerator,
	"use_data_direct":         accelerator,
	"cuda_mem_type":           accelerator,
	"use_musa":                accelerator,
	"use_musa_bus_id":         accelerator,
	"use_musa_dmabuf":         accelerator,
	"use_musa_pcie_mapping":   accelerator,
	"use_rocm":                accelerator,
	"use_rocm_dmabuf":         accelerator,
	"use_neuron":              accelerator,
	"use_neuron_dmabuf":       accelerator,
	"use_hl":                  accelerator,
	"use_mlu":                 accelerator,
	"use_mlu_dmabuf":          accelerator,
	"use_opencl":              accelerator,
	"opencl_platform_id":      accelerator,
	"gpu_touch":               accelerator,
	"use_ib_dm_dmabuf":        accelerator,
}

// onceValue is a flag's value that refuses to be set twice, as perftest
// refuses a flag given twice ("Duplicated argument"), where pflag would
// take the last (-s 64 -s 4096 ran 4096 alone). Flags that set one value
// (--tclass and -T) share one onceSet, so the second of them is refused
// too. An unsigned number out of its type's range (or of max, where the
// flag has a narrower one) is refused with the range, where strconv's
// error said only "value out of range" or "invalid syntax" (-T 300,
// -q -1).
type onceValue struct {
	pflag.Value
	name string   // the flag's name
	once *onceSet // shared by the flags that set the same value
	max  uint64   // the largest number an unsigned flag takes
}

// onceSet is whether a value was set, by which flag and to what.
type onceSet struct {
	set   bool
	first string // the value given first
	by    string // the name of the flag that gave it
}

// onceBool is onceValue for a boolean flag, which pflag's help and
// parsing tell apart by IsBoolFlag.
type onceBool struct{ onceValue }

func (v *onceBool) IsBoolFlag() bool { return true }

// repeatedError is onceValue's refusal of a second value.
type repeatedError struct {
	first string
	other string // the flag that gave the first value, where not this one
}

func (e *repeatedError) Error() string {
	if e.other != "" {
		return fmt.Sprintf("--%s gave this value already (%q): give one of them", e.other, e.first)
	}
	return fmt.Sprintf("given twice (first %q): give each flag once, as perftest's, which refuses a duplicated argument", e.first)
}

func (v *onceValue) Set(s string) error {
	if v.once.set {
		e := &repeatedError{first: v.once.first}
		if v.once.by != v.name {
			e.other = v.once.by
		}
		return e
	}
	if v.max != 0 {
		most := strconv.FormatUint(v.max, 10)
		if v.max == math.MaxUint64 {
			most = "2^64-1"
		}
		neg, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		n, uerr := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
		if (err == nil && neg < 0) || (uerr == nil && n > v.max) || errors.Is(uerr, strconv.ErrRange) {
			return fmt.Errorf("want a number from 0 to %s", most)
		}
	}
	if err := v.Value.Set(s); err != nil {
		return err
	}
	*v.once = onceSet{set: true, first: s, by: v.name}
	return nil
}

// flagMax holds the flags whose largest value is below their type's.
var flagMax = map[string]uint64{
	"sl": 15, // a service level is 4 bits
}

// refuseRepeats makes each flag of fs that takes one value refuse a
// second (onceValue), and of flags bound to one variable, the second of
// them; list flags (--flow_label, -W), which add each
// value given, are left as they are.
func refuseRepeats(fs *pflag.FlagSet) {
	// pflag's values of flags bound to one variable are one pointer.
	shared := map[pflag.Value]*onceSet{}
	fs.VisitAll(func(fl *pflag.Flag) {
		t := fl.Value.Type()
		if strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") {
			return
		}
		once := new(onceSet)
		if reflect.ValueOf(fl.Value).Kind() == reflect.Pointer {
			if o, ok := shared[fl.Value]; ok {
				once = o
			}
			shared[fl.Value] = once
		}
		v := onceValue{Value: fl.Value, name: fl.Name, once: once}
		switch t {
		case "uint8":
			v.max = math.MaxUint8
		case "uint16":
			v.max = math.MaxUint16
		case "uint32":
			v.max = math.MaxUint32
		case "uint64":
			v.max = math.MaxUint64
		}
		if m, ok := flagMax[fl.Name]; ok {
			v.max = m
		}
		if t == "bool" {
			fl.Value = &onceBool{v}
			return
		}
		fl.Value = &v
	})
}
