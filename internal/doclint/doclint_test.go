package doclint

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBindings lints the bindings and rdmamsg: every exported name
// documented, each doc starting with its name, each C verb a function
// calls named in its doc.
func TestBindings(t *testing.T) {
	for _, pkg := range []string{"ibverbs", "rdmacm", "rdmamsg"} {
		dir := filepath.Join("..", "..", pkg)
		// A test binary run outside the tree (the container image
		// carries only testdata) has no sources to lint: say so,
		// rather than pass having checked nothing.
		if srcs, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(srcs) == 0 {
			t.Skipf("no Go sources in %s to lint", dir)
		}
		probs, err := Check(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probs {
			t.Errorf("%s/%s", pkg, p)
		}
	}
}

// TestRules checks that the linter finds each kind of problem in
// testdata/bad, and nothing in testdata/good.
func TestRules(t *testing.T) {
	probs, err := Check(filepath.Join("testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"type Undocumented has no doc comment",
		`doc comment of type Thing does not start with "Thing"`,
		"func Loose has no doc comment",
		`doc comment of func Unnamed does not start with "Unnamed"`,
		`doc comment of func CreateID does not start with "CreateID"`,
		"method Thing.String has no doc comment",
		"method Thing.Close calls C.ibv_create_qp, which its doc comment does not name",
		"const Alone has no doc comment, nor has its group",
		`doc comment of const Solo does not start with "Solo"`,
		"var Bare has no doc comment",
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.Msg)
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), all)
	}

	probs, err = Check(filepath.Join("testdata", "good"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("good: %s", p)
	}
}
