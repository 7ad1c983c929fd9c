//go:build linux

package ibverbs_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"golang.org/x/sys/unix"
)

// TestMapFileHugetlbfs maps 4 KiB of a hugetlbfs file (a memfd made with
// MFD_HUGETLB, which needs no mount): the kernel maps a whole huge page,
// and Close must unmap it all, which it cannot do by 4 KiB. It needs free
// huge pages: skipped without, except in the rxe VM, where it reserves
// them.
func TestMapFileHugetlbfs(t *testing.T) {
	fd, err := unix.MemfdCreate("gorperf-hugetlb", unix.MFD_HUGETLB|unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("no hugetlbfs memfd here: %v", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:gorperf-hugetlb")
	defer f.Close()
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		t.Fatal(err)
	}
	huge := int(fs.Bsize)
	pages := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/", huge>>10)
	if os.Getenv("RXE_VM") != "" {
		if n, _ := readInt(pages + "nr_hugepages"); n < 2 {
			if err := os.WriteFile(pages+"nr_hugepages", []byte("2"), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if free, err := readInt(pages + "free_hugepages"); err != nil || free < 1 {
		if os.Getenv("RXE_VM") != "" {
			t.Fatalf("no free huge pages of %d KiB: %d, %v", huge>>10, free, err)
		}
		t.Skipf("no free huge pages of %d KiB (%s)", huge>>10, pages+"nr_hugepages")
	}
	if err := f.Truncate(int64(huge)); err != nil {
		t.Fatal(err)
	}
	const size = 4096
	b, err := ibverbs.MapFile(f, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != size || b.Addr()%uintptr(huge) != 0 {
		t.Errorf("Len %d at %#x, want %d at a multiple of %d", b.Len(), b.Addr(), size, huge)
	}
	b.Bytes()[size-1] = 1
	if err := b.Close(); err != nil {
		t.Errorf("Close of a buffer on hugetlbfs: %v", err)
	}
	if _, err := ibverbs.MapFile(f, size, size); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "huge page") {
		t.Errorf("mapping a hugetlbfs file at offset %d: %v, want EINVAL naming the huge page size", size, err)
	}
}

// readInt reads a file that holds one integer, as sysfs's do.
func readInt(name string) (int, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
