//go:build linux && cgo

package cli

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestJSONTimes: a run's --json document says when its test began on
// this side (start_time, bench's Result.Start) and when its outcome was
// known (end_time), UTC with milliseconds, so that documents gathered
// over days (gorperf serve --json, a cron job's) can be placed in time;
// a run that failed before its test began has only end_time. They had
// neither. A test's Factory gives one time (testNow), so that documents
// written a moment apart compare equal.
func TestJSONTimes(t *testing.T) {
	before := time.Now()
	start := before.Add(-3 * time.Second).In(time.FixedZone("UTC+2", 2*3600))
	res := fakeBW()
	res.Start = start
	f, out, _ := newTestFactory(nil, nil)
	f.Now = time.Now
	o := &testOptions{Test: exchange.WriteBW, JSON: true}
	if err := o.finish(f, "client", res, nil); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if want := start.UTC().Format("2006-01-02T15:04:05.000Z"); r.StartTime != want {
		t.Errorf("start_time %q, want %q", r.StartTime, want)
	}
	end, err := time.Parse(time.RFC3339, r.EndTime)
	if err != nil || end.Location() != time.UTC || end.Before(before.Truncate(time.Millisecond)) || end.After(after) {
		t.Errorf("end_time %q (%v), want UTC between %v and %v", r.EndTime, err, before, after)
	}

	f, out, _ = newTestFactory(nil, nil)
	f.Now = time.Now
	o = &testOptions{Test: exchange.WriteBW, JSON: true}
	o.finish(f, "client", nil, errors.New("no such device"))
	r = report.Result{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, r.EndTime); err != nil || r.StartTime != "" || r.Error == nil {
		t.Errorf("a run that failed at once: start_time %q, end_time %q (%v), error %v", r.StartTime, r.EndTime, err, r.Error)
	}

	// newTestFactory's clock: end_time is its time.
	f, out, _ = newTestFactory(nil, nil)
	(&testOptions{Test: exchange.WriteBW, JSON: true}).finish(f, "client", fakeBW(), nil)
	r = report.Result{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.EndTime != "2026-12-07T08:40:01.123Z" {
		t.Errorf("end_time %q (%v), want the Factory's time", r.EndTime, err)
	}
}
