//go:build linux && cgo

package ibverbs

// #include <infiniband/verbs.h>
import "C"

// ForkStatus says whether memory registered for RDMA is safe in a child
// that fork(2) made (enum ibv_fork_status).
type ForkStatus int32

// Fork statuses (IBV_FORK_*).
const (
	// ForkDisabled: ibv_fork_init has not run, and the kernel does not
	// copy registered pages for a child, so that a parent's write after a
	// fork may go to a page the device no longer reads or writes.
	ForkDisabled ForkStatus = 0
	// ForkEnabled: ibv_fork_init has run, and registered memory is
	// madvise(MADV_DONTFORK): the child does not see it at all.
	ForkEnabled ForkStatus = 1
	// ForkUnneeded: the kernel (Linux 5.13 and later) copies registered
	// pages into a child at fork, and ibv_fork_init has nothing to do.
	ForkUnneeded ForkStatus = 2
)

// The values are verbs.h's: a length below 0 or a mismatched array type
// fails the build where one is not.
var (
	_ [0]struct{} = [ForkDisabled - C.IBV_FORK_DISABLED]struct{}{}
	_ [0]struct{} = [ForkEnabled - C.IBV_FORK_ENABLED]struct{}{}
	_ [0]struct{} = [ForkUnneeded - C.IBV_FORK_UNNEEDED]struct{}{}
)

var forkStatusNames = []string{"DISABLED", "ENABLED", "UNNEEDED"}

// String returns the status's name without the IBV_FORK_ prefix
// ("UNNEEDED"), or "ForkStatus(n)" for an unknown one.
func (s ForkStatus) String() string { return enumName(forkStatusNames, int(s), "ForkStatus") }

// ForkInit prepares libibverbs for a process that calls fork(2) while it
// has memory registered (ibv_fork_init): every registration is then
// madvise(MADV_DONTFORK), at some cost to each RegMR and Close. It must
// run before anything is registered, a device's queues included: once
// libibverbs has registered memory without it, it fails with an error
// matching syscall.EINVAL, which rdma-core 44 returns even where the
// kernel makes it unneeded. Setting RDMAV_FORK_SAFE=1 in the environment
// has libibverbs do it when it first lists the devices (Devices, Open).
// It may be called more than once, but not while another goroutine
// registers memory or calls it.
//
// A Go program seldom needs it. The Go runtime never forks without exec:
// os/exec and syscall.ForkExec start a child with clone(CLONE_VM|
// CLONE_VFORK), which shares the parent's memory until it execs, so no
// page of a registration is ever copied on write. It matters only where C
// code in the process forks and goes on running (fork(2) in a cgo
// library, system(3) on a kernel older than 5.13), and with Linux 5.13
// and later, which copies registered pages into the child at fork
// (ForkState says ForkUnneeded), not even there.
func ForkInit() error {
	if rc := C.ibv_fork_init(); rc != 0 {
		return verbError("ibv_fork_init", int(rc))
	}
	return nil
}

// ForkState says whether ForkInit has run, or is unneeded because the
// kernel copies registered pages at fork (ibv_is_fork_initialized).
// libibverbs asks the kernel over the RDMA netlink interface, so a host
// whose RDMA modules are not loaded answers ForkDisabled even where its
// kernel would make fork safe.
func ForkState() ForkStatus { return ForkStatus(C.ibv_is_fork_initialized()) }
