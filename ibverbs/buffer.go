//go:build linux

package ibverbs

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffer is page-aligned memory outside the Go heap, from mmap, for a NIC
// to read and write: anonymous memory (NewBuffer) or a file's (MapFile). The garbage collector never moves or scans it, so its
// address can be registered and handed to a device.
type Buffer struct {
	b    []byte
	mem  []byte // the whole mapping, as mmap returned it
	kids refs
	use  inUse // guards the mapping against Close while a RegMR reads it
}

// BufferOptions tune NewBuffer.
type BufferOptions struct {
	// HugePages backs the buffer with 2 MiB huge pages (MAP_HUGETLB,
	// MAP_HUGE_2MB), whatever the system's default huge page size. The
	// size is rounded up to a multiple of HugePageSize, and the call fails
	// if the system has none free (see
	// /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages).
	HugePages bool
}

// NewBuffer maps size bytes of zeroed, page-aligned anonymous memory
// (mmap with MAP_ANONYMOUS, and MAP_HUGETLB for BufferOptions.HugePages).
// It wraps no verb: PD.RegMR registers the memory.
func NewBuffer(size int, opt BufferOptions) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("ibverbs: invalid buffer size %d: %w", size, syscall.EINVAL)
	}
	flags := syscall.MAP_PRIVATE | syscall.MAP_ANONYMOUS
	n := size
	if opt.HugePages {
		// The size is named: without it the kernel takes the system's
		// default huge page (1 GiB on hosts booted with
		// default_hugepagesz=1G), maps more than n and refuses to unmap n.
		flags |= syscall.MAP_HUGETLB | unix.MAP_HUGE_2MB
		n = (size + HugePageSize - 1) &^ (HugePageSize - 1)
	} else {
		pg := os.Getpagesize()
		n = (size + pg - 1) &^ (pg - 1)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, flags)
	if err != nil {
		if opt.HugePages {
			return nil, fmt.Errorf("ibverbs: %d bytes of 2 MiB huge pages (see /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages): %w", n, os.NewSyscallError("mmap", err))
		}
		return nil, fmt.Errorf("ibverbs: buffer of %d bytes: %w", n, os.NewSyscallError("mmap", err))
	}
	return newBuffer(b, size), nil
}

// MapFile maps size bytes of the file f from offset off as a Buffer, shared
// with the file (mmap with MAP_SHARED): what a device writes through an MR
// over the buffer lands in the file's pages, and what the file holds a peer
// can read. It serves memory that is not the process's own, such as a file
// on tmpfs or hugetlbfs that other processes map too, or a PCI device's BAR
// through its sysfs resource file for peer-to-peer transfers (perftest's
// --mmap). Whether a device can register the pages depends on the file
// system: the kernel refuses to pin some (DAX, for one).
//
// off must be a multiple of the page size: on hugetlbfs, of the file
// system's huge page size, to which the mapping is rounded up too. A
// regular file must hold off+size bytes, because touching a mapping past a
// file's end kills the process (SIGBUS). The file needs to be open for
// reading and writing. f may be closed once MapFile returns: the mapping
// keeps the file open.
func MapFile(f *os.File, off int64, size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("ibverbs: invalid buffer size %d: %w", size, syscall.EINVAL)
	}
	pg, unit := os.Getpagesize(), "page size"
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return nil, fmt.Errorf("ibverbs: mapping %s: %w", f.Name(), os.NewSyscallError("fstatfs", err))
	}
	if uint32(fs.Type) == unix.HUGETLBFS_MAGIC && fs.Bsize > 0 {
		// The kernel maps whole huge pages, and unmaps only whole ones:
		// a mapping of n rounded to 4 KiB could never be unmapped.
		pg, unit = int(fs.Bsize), "huge page size of its hugetlbfs"
	}
	if off < 0 || off%int64(pg) != 0 {
		return nil, fmt.Errorf("ibverbs: mapping %s at offset %d: not a multiple of the %s (%d): %w",
			f.Name(), off, unit, pg, syscall.EINVAL)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ibverbs: mapping %s: %w", f.Name(), err)
	}
	if fi.Mode().IsRegular() && fi.Size()-off < int64(size) {
		return nil, fmt.Errorf("ibverbs: mapping %d bytes of %s at offset %d: the file has %d bytes: %w",
			size, f.Name(), off, fi.Size(), syscall.EINVAL)
	}
	n := (size + pg - 1) &^ (pg - 1)
	b, err := syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("ibverbs: mapping %d bytes of %s at offset %d: %w", n, f.Name(), off, os.NewSyscallError("mmap", err))
	}
	return newBuffer(b, size), nil
}

// newBuffer returns an open Buffer of size bytes of the mapping m.
func newBuffer(m []byte, size int) *Buffer {
	buf := &Buffer{b: m[:size:size], mem: m}
	buf.use.Open()
	return buf
}

// Bytes returns the buffer's memory. The slice is invalid after Close.
func (b *Buffer) Bytes() []byte { return b.b }

// Len returns the buffer's size in bytes.
func (b *Buffer) Len() int { return len(b.b) }

// Addr returns the address of the first byte, or 0 after Close.
func (b *Buffer) Addr() uintptr {
	if b.b == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b.b)))
}

// Close unmaps the buffer (munmap). It fails with EBUSY while MRs over it
// are registered. A RegMR of the buffer under way in another goroutine
// finishes first, and Close fails with EBUSY if it registered an MR; one
// that begins once Close has begun returns ErrClosed. Closing twice is a
// no-op.
func (b *Buffer) Close() error {
	b.use.Lock()
	defer b.use.Unlock()
	if b.b == nil {
		return nil
	}
	if n := b.use.Quiesce(b.kids.count, nil); n > 0 {
		return busyError("munmap", n, "MR over the buffer", "MRs over the buffer")
	}
	if err := syscall.Munmap(b.mem); err != nil {
		b.use.Open()
		return os.NewSyscallError("munmap", err) // the buffer stays, to try again
	}
	b.b, b.mem = nil, nil
	return nil
}
