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

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
