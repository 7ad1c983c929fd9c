// Package doclint checks the doc comments of a package's exported API, as
// the bindings' tests run it over ibverbs, rdmacm and rdmamsg:
//
//   - every exported type, function, method (of an exported type),
//     constant and variable has a doc comment; a constant or variable in a
//     parenthesised group is documented by the group's comment, or by its
//     own comment or line comment;
//   - a doc comment of a type, function or method, and of a constant or
//     variable declared alone, starts with the identifier's name (Go's
//     convention: "CreateID creates ..."); no article ("A", "The") before
//     it, as nothing in the repository has one;
//   - an exported function or method whose body (closures included) calls
//     a C verb directly, C.ibv_* or C.rdma_*, names each such verb in its
//     doc comment, so that a reader of C documentation finds it. Verbs
//     reached through the shim (C.gv_*, C.gr_*) are not counted.
//
// String, Error, Unwrap and Is methods are not exempt: what String prints
// for a value without a name, or what an error's message holds, is worth a
// line.
//
// Only the package's non-test .go files are read, whatever their build
// constraints, and with go/parser alone: it runs anywhere, without cgo.
package doclint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Problem is one finding: where, and what is wrong.
type Problem struct {
	Pos token.Position
	Msg string
}

// String formats the problem as "file:line: message".
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", filepath.Base(p.Pos.Filename), p.Pos.Line, p.Msg)
}

// Check lints the non-test .go files in dir and returns the problems
// found, ordered by file and line.
func Check(dir string) ([]Problem, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Problem
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		out = append(out, checkFile(fset, f)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return out, nil
}

func checkFile(fset *token.FileSet, f *ast.File) []Problem {
	var out []Problem
	report := func(pos token.Pos, format string, args ...any) {
		out = append(out, Problem{Pos: fset.Position(pos), Msg: fmt.Sprintf(format, args...)})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if !ast.IsExported(name) {
				continue
			}
			what := "func " + name
			if d.Recv != nil {
				recv := recvType(d.Recv)
				if !ast.IsExported(recv) {
					continue // not in the package's documentation
				}
				what = "method " + recv + "." + name
			}
			if d.Doc == nil {
				report(d.Pos(), "%s has no doc comment", what)
				continue
			}
			text := d.Doc.Text()
			if !startsWith(text, name) {
				report(d.Doc.Pos(), "doc comment of %s does not start with %q: %q", what, name, firstLine(text))
			}
			for _, v := range cVerbs(d.Body) {
				if !mentions(text, v.name) {
					report(v.pos, "%s calls C.%s, which its doc comment does not name", what, v.name)
				}
			}
		case *ast.GenDecl:
			grouped := d.Lparen.IsValid()
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					name := s.Name.Name
					if !ast.IsExported(name) {
						continue
					}
					doc := s.Doc
					if doc == nil && !grouped {
						doc = d.Doc
					}
					if doc == nil {
						report(s.Pos(), "type %s has no doc comment", name)
						continue
					}
					if text := doc.Text(); !startsWith(text, name) {
						report(doc.Pos(), "doc comment of type %s does not start with %q: %q", name, name, firstLine(text))
					}
				case *ast.ValueSpec:
					kind := strings.ToLower(d.Tok.String())
					for _, id := range s.Names {
						name := id.Name
						if !ast.IsExported(name) {
							continue
						}
						if grouped {
							if d.Doc == nil && s.Doc == nil && s.Comment == nil {
								report(id.Pos(), "%s %s has no doc comment, nor has its group", kind, name)
							}
							continue
						}
						if d.Doc == nil {
							report(id.Pos(), "%s %s has no doc comment", kind, name)
							continue
						}
						if text := d.Doc.Text(); !startsWithAny(text, s.Names) {
							report(d.Doc.Pos(), "doc comment of %s %s does not start with %q: %q", kind, name, name, firstLine(text))
						}
					}
				}
			}
		}
	}
	return out
}

// recvType is the name of a receiver's base type: T for T, *T, T[P].
func recvType(fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	t := fl.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// startsWith says whether text's first word is name: name followed by
// anything but a letter, digit or underscore.
func startsWith(text, name string) bool {
	if !strings.HasPrefix(text, name) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(text[len(name):])
	return r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

func startsWithAny(text string, names []*ast.Ident) bool {
	for _, id := range names {
		if startsWith(text, id.Name) {
			return true
		}
	}
	return false
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return line
}

type verbCall struct {
	name string
	pos  token.Pos
}

var verbPrefix = regexp.MustCompile(`^(ibv|rdma)_`)

// cVerbs lists the C verbs, C.ibv_* and C.rdma_*, that body calls, each
// once, in order of first call; calls in closures count.
func cVerbs(body *ast.BlockStmt) []verbCall {
	if body == nil {
		return nil
	}
	var out []verbCall
	seen := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "C" || !verbPrefix.MatchString(sel.Sel.Name) {
			return true
		}
		if !seen[sel.Sel.Name] {
			seen[sel.Sel.Name] = true
			out = append(out, verbCall{sel.Sel.Name, call.Pos()})
		}
		return true
	})
	return out
}

// mentions says whether text names verb as a word of its own: ibv_create_qp
// is not named by ibv_create_qp_ex.
func mentions(text, verb string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], verb)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(verb)
		if !identByte(text, j-1) && !identByte(text, end) {
			return true
		}
		i = j + 1
	}
}

func identByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
