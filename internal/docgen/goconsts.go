package docgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// goConst is a string constant declared in Go source, with its doc comment.
type goConst struct {
	Name  string
	Value string
	// Type is the constant's declared type name ("" when untyped).
	Type string
	// Doc is the comment above the constant (or its line comment), in one line; "" when none.
	Doc string
	// Group is the doc comment of the const block, for constants without a doc of their own.
	Group string
	// File is the file it is declared in, from the repository root.
	File string
}

// parseDir parses the non-test Go files of one directory of the repository.
func parseDir(root, dir string) (*token.FileSet, []*ast.File, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return fset.File(files[i].Pos()).Name() < fset.File(files[j].Pos()).Name() })
	return fset, files, nil
}

// stringConsts are the string constants declared in one directory, in source order. A
// constant without an explicit type in a block takes the type of the one before it (as Go
// repeats the previous spec only without values; here it is the block's convention).
func stringConsts(root, dir string) ([]goConst, error) {
	fset, files, err := parseDir(root, dir)
	if err != nil {
		return nil, err
	}
	var out []goConst
	for _, f := range files {
		rel, _ := filepath.Rel(root, fset.File(f.Pos()).Name())
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			group := commentText(gd.Doc)
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				doc := commentText(vs.Doc)
				if doc == "" {
					doc = commentText(vs.Comment)
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, fmt.Errorf("%s: %s: %w", rel, n.Name, err)
					}
					out = append(out, goConst{Name: n.Name, Value: v, Type: typ, Doc: doc, Group: group, File: filepath.ToSlash(rel)})
				}
			}
		}
	}
	return out, nil
}

// commentText is a comment group as one line, without tool directives (#nosec, nolint).
func commentText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	t := g.Text()
	if i := strings.Index(t, "#nosec"); i >= 0 {
		t = t[:i]
	}
	return strings.Join(strings.Fields(t), " ")
}
