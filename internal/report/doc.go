// Package report writes gorperf results for people and for programs.
//
// The text output copies perftest 4.5 byte for byte where perftest has an
// equivalent: the test header block (WriteHeader), the bandwidth table
// (WriteBWHeader, WriteBWRow), the latency table (WriteLatHeader,
// WriteLatRow) and that of a latency run of a duration, perftest's -D
// (WriteLatDurHeader, WriteLatWindowRow), separated by the same dashed rules
// (WriteRule). The figures are computed as perftest computes them, from
// gorperf's own measurements: the duration table's (WriteLatWindowRow)
// from the measuring window's time and iterations (LatDur), not from the
// samples, which leave out gorperf's pauses (a yield to the scheduler
// every few milliseconds). After the
// perftest table gorperf adds what perftest lacks: a percentile line
// (WritePercentiles) and a latency histogram (WriteHistogram). The side
// of a latency test that keeps no samples (the peer timed it) gets a line
// saying so in place of each row and of the percentiles, not zeros; its
// JSON sizes have no latency fields and set measured_by_peer.
//
// For programs there is a versioned JSON document (Result, WriteJSON) and
// a CSV table (WriteCSV), with a --run_infinitely run's intervals in
// both. Every write function returns the first error of the underlying
// io.Writer.
//
// A full bandwidth report is written in this order:
//
//	WriteHeader(w, h)
//	WriteBWHeader(w, gbits)
//	WriteBWRow(w, bw, gbits) // once per message size
//	WriteRule(w)
package report
