package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/featuregate"

	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raygatectl"
)

// facts are what the documents may name: read from the repository, never written by hand.
type facts struct {
	// targets are the Makefile's targets.
	targets map[string]bool
	// flags are the flags of each program, by program (see programs).
	flags map[string]map[string]bool
	// values are the chart's value paths ("webhook.timeoutSeconds"); open are the paths under
	// which any key is allowed (free-form maps).
	values, open map[string]bool
	// keys are the string constants of the operator's code (annotation and label keys).
	keys map[string]bool
	// tests are the Go test, benchmark and fuzz functions of the repository.
	tests map[string]bool
	// exists says whether a repository path exists (globs allowed).
	exists func(path string) bool
	// flagValue says what is wrong with a value of a manager flag ("" when it is accepted).
	flagValue func(name, value string) string
}

// Programs whose flags documents name.
const (
	manager = "manager"
	local   = "local mode (make run)"
	demo    = "demo (make demo)"
	plugin  = "kubectl raygate"
	bench   = "benchmark (make bench)"
)

// loadFacts reads the facts of the repository at root.
func loadFacts(root string) (facts, error) {
	f := facts{flags: map[string]map[string]bool{}}
	var err error
	if f.targets, err = makeTargets(filepath.Join(root, "Makefile")); err != nil {
		return f, err
	}
	f.flags[manager] = managerFlags()
	f.flagValue = managerFlagValue
	f.flags[plugin] = pluginFlags()
	for name, dir := range map[string]string{local: "cmd/raygate-local", demo: "cmd/raygate-demo", bench: "test/bench"} {
		if f.flags[name], err = declaredFlags(filepath.Join(root, dir)); err != nil {
			return f, err
		}
	}
	if f.values, f.open, err = valuePaths(filepath.Join(root, "charts", "raygate")); err != nil {
		return f, err
	}
	if f.keys, err = stringConstants(root, "apis", "controllers", "webhooks", "internal", "cmd"); err != nil {
		return f, err
	}
	if f.tests, err = testFunctions(root); err != nil {
		return f, err
	}
	f.exists = func(p string) bool {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil && len(matches) > 0
	}
	return f, nil
}

var makeTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9][a-zA-Z0-9_.-]*):`)

func makeTargets(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out, nil
}

// managerFlags are the manager's flags as it binds them, KubeRay's names included.
func managerFlags() map[string]bool {
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts := app.DefaultOptions()
	opts.BindFlags(fs)
	out := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
	return out
}

// managerFlagValue says why the manager refuses value for its flag name, given alone on top
// of the defaults: the flag's parser, or a start-up check whose message names this flag and
// no other (a check of two flags together, such as the leader election's timings, cannot
// judge one of them).
func managerFlagValue(name, value string) string {
	if name == "feature-gates" {
		// A gate of its own: setting the process-wide one would keep a bad name for the next.
		gate := featuregate.NewFeatureGate()
		if err := gate.Add(features.Specs); err != nil {
			return err.Error()
		}
		if err := gate.Set(value); err != nil {
			return err.Error()
		}
		return ""
	}
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	opts := app.DefaultOptions()
	opts.BindFlags(fs)
	if err := fs.Set(name, value); err != nil {
		return err.Error()
	}
	err := opts.Validate()
	if err == nil {
		return ""
	}
	var problems []string
	for _, p := range strings.Split(strings.TrimPrefix(err.Error(), "invalid options: "), "; ") {
		if named := namedFlags.FindAllString(p, -1); len(named) > 0 && !slices.ContainsFunc(named, func(f string) bool { return f != "--"+name }) {
			problems = append(problems, p)
		}
	}
	return strings.Join(problems, "; ")
}

var namedFlags = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// pluginFlags are the flags of every `kubectl raygate` command.
func pluginFlags() map[string]bool {
	out := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(raygatectl.NewCommand(genericiooptions.NewTestIOStreamsDiscard()))
	return out
}

var flagName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// flagDefiners are the flag and pflag functions whose first name-like string argument is a
// flag's name.
var flagDefiners = regexp.MustCompile(`^(String|Bool|Int|Int32|Int64|Uint|Uint64|Float64|Duration|StringSlice|Func|Text|)(Var)?P?$`)

// declaredFlags are the flags a main package defines with the flag or pflag package (it is
// not run: a program that starts a control plane cannot be asked for its --help cheaply).
func declaredFlags(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	pkgs, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	for _, file := range pkgs {
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !flagDefiners.MatchString(sel.Sel.Name) {
				return true
			}
			for _, arg := range call.Args {
				if s, ok := stringLiteral(arg); ok && flagName.MatchString(s) {
					out[s] = true
					break
				}
			}
			return true
		})
	}
	return out, nil
}

// parseDir parses the non-test Go files of one directory.
func parseDir(dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func stringLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// stringConstants are the values of the string constants declared in the non-test Go files
// under dirs: literals, and concatenations of literals and constants (of the same package,
// or exported ones of another: rayv1.RaygateKeyPrefix + "copied-annotations").
func stringConstants(root string, dirs ...string) (map[string]bool, error) {
	var pkgs []map[string]ast.Expr
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if e.Name() == "testdata" || e.Name() == "testenv" {
				return filepath.SkipDir
			}
			files, err := parseDir(path)
			if err != nil {
				return err
			}
			pkgs = append(pkgs, constExprs(files))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	exported := map[string][]constRef{}
	for _, pkg := range pkgs {
		for name, e := range pkg {
			if ast.IsExported(name) {
				exported[name] = append(exported[name], constRef{pkg, e})
			}
		}
	}
	out := map[string]bool{}
	for _, pkg := range pkgs {
		for _, e := range pkg {
			if v, ok := evalString(pkg, exported, e, 0); ok {
				out[v] = true
			}
		}
	}
	return out, nil
}

// constRef is a constant's expression in its package.
type constRef struct {
	pkg  map[string]ast.Expr
	expr ast.Expr
}

// constExprs are the expressions of a package's constants, by name.
func constExprs(files []*ast.File) map[string]ast.Expr {
	exprs := map[string]ast.Expr{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						exprs[name.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return exprs
}

// evalString evaluates a string constant expression; depth bounds a cycle.
func evalString(pkg map[string]ast.Expr, exported map[string][]constRef, e ast.Expr, depth int) (string, bool) {
	if depth > 20 {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		return stringLiteral(e)
	case *ast.Ident:
		if x, ok := pkg[e.Name]; ok {
			return evalString(pkg, exported, x, depth+1)
		}
	case *ast.SelectorExpr:
		for _, ref := range exported[e.Sel.Name] {
			if v, ok := evalString(ref.pkg, exported, ref.expr, depth+1); ok {
				return v, true
			}
		}
	case *ast.ParenExpr:
		return evalString(pkg, exported, e.X, depth+1)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l, lok := evalString(pkg, exported, e.X, depth+1)
			r, rok := evalString(pkg, exported, e.Y, depth+1)
			return l + r, lok && rok
		}
	}
	return "", false
}

var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z_0-9]\w*)\(`)

// testFunctions are the names of the Go test functions of the repository.
func testFunctions(root string) (map[string]bool, error) {
	out := map[string]bool{}
	repo := os.DirFS(root)
	err := fs.WalkDir(repo, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != "." && (strings.HasPrefix(e.Name(), ".") || e.Name() == "bin") {
			return fs.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := fs.ReadFile(repo, path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	return out, err
}

// valuePaths are the chart's value paths from values.yaml and values.schema.json, and the
// paths under which any key is allowed.
func valuePaths(chart string) (paths, open map[string]bool, err error) {
	paths, open = map[string]bool{}, map[string]bool{}
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var values any
	if err := yaml.Unmarshal(b, &values); err != nil {
		return nil, nil, err
	}
	walkValues("", values, paths, open)
	b, err = os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		return nil, nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		return nil, nil, err
	}
	defs, _ := schema["definitions"].(map[string]any)
	walkSchema("", schema, defs, paths, open, 0)
	return paths, open, nil
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func walkValues(prefix string, v any, paths, open map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 && prefix != "" {
			open[prefix] = true
		}
		for k, x := range v {
			paths[join(prefix, k)] = true
			walkValues(join(prefix, k), x, paths, open)
		}
	case []any:
		for _, x := range v {
			walkValues(prefix, x, paths, open)
		}
	}
}

// walkSchema collects the properties of a JSON schema; "$ref"s to its definitions are
// followed (depth bounds a definition that refers to itself).
func walkSchema(prefix string, s, defs map[string]any, paths, open map[string]bool, depth int) {
	if depth > 20 {
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		if def, ok := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any); ok {
			walkSchema(prefix, def, defs, paths, open, depth+1)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, x := range props {
			paths[join(prefix, k)] = true
			if sub, ok := x.(map[string]any); ok {
				walkSchema(join(prefix, k), sub, defs, paths, open, depth+1)
			}
		}
	}
	if add, ok := s["additionalProperties"]; ok && add != false && prefix != "" {
		open[prefix] = true
	}
	if sub, ok := s["items"].(map[string]any); ok {
		walkSchema(prefix, sub, defs, paths, open, depth+1)
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		if alts, ok := s[key].([]any); ok {
			for _, a := range alts {
				if sub, ok := a.(map[string]any); ok {
					walkSchema(prefix, sub, defs, paths, open, depth+1)
				}
			}
		}
	}
}
