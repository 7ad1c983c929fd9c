package affinity

import (
	"slices"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		text string // FormatList of want
	}{
		{"0", []int{0}, "0"},
		{"0,1,2", []int{0, 1, 2}, "0-2"},
		{"0-3", []int{0, 1, 2, 3}, "0-3"},
		{"0-3,8,12-15", []int{0, 1, 2, 3, 8, 12, 13, 14, 15}, "0-3,8,12-15"},
		{" 8, 2-3 ,3\n", []int{2, 3, 8}, "2-3,8"},
		{"5-5", []int{5}, "5"},
		{"1023", []int{1023}, "1023"},
	} {
		got, err := ParseList(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if s := FormatList(tc.want); s != tc.text {
			t.Errorf("FormatList(%v) = %q, want %q", tc.want, s, tc.text)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `"" is not a CPU number`},
		{"a", `"a" is not a CPU number`},
		{"1,,2", `"" is not a CPU number`},
		{"-1", `"-1" is not a CPU number`},
		{"3-1", `the range "3-1" runs backwards`},
		{"0-", `"0-" is not a CPU number`},
		{"1024", "CPU 1024 is past the 1024"},
		{"0-5000", "CPU 5000 is past the 1024"},
	} {
		if got, err := ParseList(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseList(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.want)
		}
	}
	if s := FormatList(nil); s != "" {
		t.Errorf("FormatList(nil) = %q", s)
	}
}
