//go:build !linux

package affinity

import (
	"errors"
	"fmt"
	"runtime"
)

var errNoAffinity = fmt.Errorf("CPU affinity on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Current fails: CPU affinity is Linux's here.
func Current() ([]int, error) { return nil, errNoAffinity }

// Online fails: CPU affinity is Linux's here.
func Online() ([]int, error) { return nil, errNoAffinity }

// NodeCPUs fails: NUMA nodes are read from Linux's sysfs.
func NodeCPUs(int) ([]int, error) { return nil, errNoAffinity }

// PinThread fails: CPU affinity is Linux's here.
func PinThread(int) error { return errNoAffinity }

// SpreadCores returns cpus as they are: the topology is Linux's here.
func SpreadCores(cpus []int) []int { return cpus }
