package stats

import "time"

// CPU is the processor time one process used over a stretch of wall-clock
// time in which it handled some messages: gorperf's --cpu_util, the cost
// of a size's run to the side that measured it.
type CPU struct {
	// User and System are the process's user and kernel time in the
	// stretch, all its threads together.
	User, System time.Duration
	// Wall is the stretch's length.
	Wall time.Duration
	// Messages is the number of messages of the stretch.
	Messages uint64
	// HostUser and HostIdle are the clock ticks that the host's CPUs,
	// all of them together, spent in user mode and idle over the
	// stretch: the first and the fourth figure of /proc/stat's "cpu"
	// line, which perftest's --cpu_util reads. Both are zero where
	// /proc/stat could not be read.
	HostUser, HostIdle uint64
}

// PerMessage returns the user and the system time a message, in
// microseconds; zero without messages.
func (c CPU) PerMessage() (userUs, sysUs float64) {
	if c.Messages == 0 {
		return 0, 0
	}
	n := float64(c.Messages)
	return us(c.User) / n, us(c.System) / n
}

// Percent returns user and system time together as a share of the wall
// time, where 100 is one CPU kept busy (a process with several busy
// threads exceeds it); zero for an empty stretch.
func (c CPU) Percent() float64 {
	if c.Wall <= 0 {
		return 0
	}
	return 100 * float64(c.User+c.System) / float64(c.Wall)
}

// HostUserPercent returns perftest's CPU_Util[%] (its calc_cpu_util):
// the host's user time as a share of its user and idle time, in
// percent, from 0 to 100; zero where neither moved. It counts every
// process on the host, and leaves out its system, nice and I/O wait
// time, as perftest's does.
func (c CPU) HostUserPercent() float64 {
	if c.HostUser+c.HostIdle == 0 {
		return 0
	}
	return 100 * float64(c.HostUser) / float64(c.HostUser+c.HostIdle)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
