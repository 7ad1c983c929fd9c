//go:build linux && cgo

package rdmatest

// #include <malloc.h>
import "C"

// cHeapInUse is what the C allocator has handed out and not had back, in
// all arenas and in chunks of their own (glibc's mallinfo2: uordblks plus
// hblkhd): the memory libibverbs, librdmacm and the providers hold.
func cHeapInUse() uint64 {
	mi := C.mallinfo2()
	return uint64(mi.uordblks) + uint64(mi.hblkhd)
}

// cLeak allocates n bytes with malloc and never frees them, so that a test
// can show a leak check sees C-side leaks.
func cLeak(n int) { C.malloc(C.size_t(n)) }
