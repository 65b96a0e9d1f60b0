package docgen

import (
	"fmt"
	"go/ast"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// constSection is one table of the conditions page: the constants of dir that match.
type constSection struct {
	title, dir string
	match      func(goConst) bool
}

func ofType(t string) func(goConst) bool { return func(c goConst) bool { return c.Type == t } }

func inBlock(doc string) func(goConst) bool {
	return func(c goConst) bool { return c.Type == "" && c.Group == doc }
}

// conditionSections are the condition types and reasons of the API. Every constant of
// apis/ray/v1/conditions.go must land in one (conditionsPage checks), so a new block of
// conditions or reasons needs a section here.
var conditionSections = []constSection{
	{"RayCluster condition types", "apis/ray/v1", ofType("RayClusterConditionType")},
	{"RayCluster condition reasons", "apis/ray/v1", inBlock("RayCluster condition reasons.")},
	{"RayService condition types", "apis/ray/v1", ofType("RayServiceConditionType")},
	{"RayService condition reasons", "apis/ray/v1", inBlock("RayService condition reasons.")},
	{"RayService UpgradeAction condition reasons", "apis/ray/v1", inBlock("Reasons of the raygate-only UpgradeAction condition.")},
	{"RayService UpgradeGates condition", "apis/raygate/v1alpha1", func(c goConst) bool { return c.Name == "UpgradeGatesCondition" }},
	{"RayService UpgradeGates condition reasons", "apis/raygate/v1alpha1", inBlock("Reasons of the UpgradeGates condition.")},
	{"RayJob failure reasons (`status.reason` when `jobDeploymentStatus` is `Failed`)", "apis/ray/v1", ofType("JobFailedReason")},
	{"KubeRay's RayCluster event reasons (declared for compatibility)", "apis/ray/v1", ofType("EventReason")},
}

// eventKinds name the object whose events a controller directory emits.
var eventKinds = []struct{ dir, kind string }{
	{"controllers/raycluster", "RayCluster"},
	{"controllers/rayservice", "RayService"},
	{"controllers/rayjob", "RayJob"},
	{"controllers/raycronjob", "RayCronJob"},
}

func conditionsPage(root string) (File, error) {
	p := newPage("Conditions, reasons and events", "the constants of apis/ and controllers/")
	p.para("What `kubectl describe` and `kubectl get events` show: the condition types and reasons in the objects' " +
		"`status.conditions`, and the reasons of the Events each controller emits, with their type (Normal: an API call " +
		"or step succeeded; Warning: it failed or needs attention). Condition types and reasons shared with KubeRay have " +
		"KubeRay's values.")
	consts := map[string][]goConst{}
	used := map[string]bool{}
	for _, s := range conditionSections {
		if _, ok := consts[s.dir]; !ok {
			cs, err := stringConsts(root, s.dir)
			if err != nil {
				return File{}, err
			}
			consts[s.dir] = cs
		}
		var rows [][]string
		for _, c := range consts[s.dir] {
			if !s.match(c) {
				continue
			}
			used[c.File+"."+c.Name] = true
			rows = append(rows, []string{code(c.Value), code(c.Name), cell(stripName(c.Doc, c.Name))})
		}
		if len(rows) == 0 {
			return File{}, fmt.Errorf("conditions page: no constant of %s for %q", s.dir, s.title)
		}
		fmt.Fprintf(&p.b, "## %s\n\n", s.title)
		p.table([]string{"value", "Go constant", "meaning"}, rows)
	}
	for _, c := range consts["apis/ray/v1"] {
		if c.File == "apis/ray/v1/conditions.go" && !used[c.File+"."+c.Name] {
			return File{}, fmt.Errorf("conditions page: %s (%s) is in no section of internal/docgen's conditionSections", c.Name, c.File)
		}
	}

	events, err := eventReasons(root)
	if err != nil {
		return File{}, err
	}
	p.b.WriteString("## Events\n\n")
	p.para("The type is read from where the controller emits the reason; *set at run time* means the call site " +
		"passes it on from elsewhere.")
	p.table([]string{"object", "reason", "type", "Go constant", "meaning"}, events)
	return File{Path: "docs/reference/conditions-and-events.md", Content: p.String()}, nil
}

// eventConst is an event reason constant of a controller package.
type eventConst struct {
	goConst
	dir   string
	types map[string]bool
	// refs counts the constant's names in the source, its declaration included.
	refs int
}

// eventReasons lists the event reason constants of the controllers (Event* and, in
// raycronjob, Reason*), each with the event types its call sites give it.
func eventReasons(root string) ([][]string, error) {
	var dirs []string
	for _, k := range eventKinds {
		err := filepath.WalkDir(filepath.Join(root, k.dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, path)
			dirs = append(dirs, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	byKey := map[string]*eventConst{}
	var all []*eventConst
	for _, dir := range dirs {
		cs, err := stringConsts(root, dir)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if !isEventReasonName(c.Name) {
				continue
			}
			e := &eventConst{goConst: c, dir: dir, types: map[string]bool{}}
			byKey[dir+"."+c.Name] = e
			all = append(all, e)
		}
	}
	a := &eventFlow{consts: byKey, returns: map[string][]string{}, fields: map[string][]string{}}
	parsed := map[string][]*ast.File{}
	for _, dir := range dirs {
		_, files, err := parseDir(root, dir)
		if err != nil {
			return nil, err
		}
		parsed[dir] = files
		for _, f := range files {
			a.collect(dir, f)
		}
	}
	for _, dir := range dirs {
		for _, f := range parsed[dir] {
			a.emissions(dir, f)
		}
	}
	var rows [][]string
	for _, e := range all {
		if e.refs < 2 || strings.HasPrefix(e.Name, "Reason") && len(e.types) == 0 {
			// Declared but never used; or a Reason* constant, a condition reason unless
			// an event is emitted with it.
			continue
		}
		kind := ""
		for _, k := range eventKinds {
			if e.dir == k.dir || strings.HasPrefix(e.dir, k.dir+"/") {
				kind = k.kind
			}
		}
		var types []string
		for t := range e.types {
			types = append(types, t)
		}
		sort.Strings(types)
		typ := strings.Join(types, ", ")
		if typ == "" {
			typ = "*set at run time*"
		}
		doc := stripName(e.Doc, e.Name)
		rows = append(rows, []string{kind, code(e.Value), typ, code(filepath.Base(e.dir) + "." + e.Name), cell(doc)})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i][0] != rows[j][0] {
			return rows[i][0] < rows[j][0]
		}
		return rows[i][1] < rows[j][1]
	})
	return rows, nil
}

func isEventReasonName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Event")
	if !ok {
		rest, ok = strings.CutPrefix(name, "Reason")
	}
	return ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z'
}

// eventTypeOf is the event type a call or literal gives: from the function's name
// (normal, warn...) or an EventTypeNormal/EventTypeWarning argument or field.
func eventTypeOf(fn string, args []ast.Expr) string {
	lower := strings.ToLower(fn)
	switch {
	case strings.HasPrefix(lower, "warn"):
		return "Warning"
	case strings.HasPrefix(lower, "normal"):
		return "Normal"
	}
	for _, a := range args {
		if sel, ok := a.(*ast.SelectorExpr); ok {
			switch sel.Sel.Name {
			case "EventTypeWarning":
				return "Warning"
			case "EventTypeNormal":
				return "Normal"
			}
		}
	}
	return ""
}

// importDirs maps a file's import names to the repository directories they are (for this
// module's packages).
func importDirs(f *ast.File) map[string]string {
	const module = "github.com/raygate/raygate/"
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.HasPrefix(path, module) {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = strings.TrimPrefix(path, module)
	}
	return out
}

// eventFlow finds the event type of each reason constant from the calls that emit events:
// a reason given directly, through a struct field (ownedKind{created: EventX} and later
// normal(k.created)), or returned by a function (reason := FailureReason(a)).
type eventFlow struct {
	consts map[string]*eventConst
	// returns are the reason constants each function ("dir.Name") returns.
	returns map[string][]string
	// fields are the reason constants set on each struct field name ("dir.field").
	fields map[string][]string
}

// ref is the constant key ("dir.Name") an expression names, or "".
func (a *eventFlow) ref(dir string, imports map[string]string, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return dir + "." + e.Name
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && imports[pkg.Name] != "" {
			return imports[pkg.Name] + "." + e.Sel.Name
		}
	}
	return ""
}

// collect records what functions return and what struct fields are set to.
func (a *eventFlow) collect(dir string, f *ast.File) {
	imports := importDirs(f)
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		key := dir + "." + fn.Name.Name
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false
			}
			if r, ok := n.(*ast.ReturnStmt); ok {
				for _, res := range r.Results {
					if k := a.ref(dir, imports, res); a.consts[k] != nil {
						a.returns[key] = append(a.returns[key], k)
					}
				}
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if k := a.ref(dir, imports, n); a.consts[k] != nil {
				a.consts[k].refs++
			}
			return false
		case *ast.Ident:
			if k := a.ref(dir, imports, n); a.consts[k] != nil {
				a.consts[k].refs++
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || eventTypeOf("", elements(lit)) != "" {
			// A literal with its own event type is an emission, not a flow (emissions).
			return true
		}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			field, ok := kv.Key.(*ast.Ident)
			if !ok || ast.IsExported(field.Name) {
				// Only the package's own unexported fields carry a reason to an emission;
				// exported ones (metav1.Condition's Reason) hold condition reasons too.
				continue
			}
			if k := a.ref(dir, imports, kv.Value); a.consts[k] != nil {
				a.fields[dir+"."+field.Name] = append(a.fields[dir+"."+field.Name], k)
			}
		}
		return true
	})
}

// callee is the function key ("dir.Name") a call calls, or "".
func (a *eventFlow) callee(dir string, imports map[string]string, e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	return a.ref(dir, imports, call.Fun)
}

// emissions marks the reasons of every call or literal that has an event type.
func (a *eventFlow) emissions(dir string, f *ast.File) {
	imports := importDirs(f)
	// assigned are the functions whose result a local name is assigned from.
	assigned := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
			for i, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					if c := a.callee(dir, imports, as.Rhs[i]); c != "" {
						assigned[id.Name] = append(assigned[id.Name], c)
					}
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		var args []ast.Expr
		name := ""
		switch n := n.(type) {
		case *ast.CallExpr:
			args = n.Args
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
		case *ast.CompositeLit:
			args = elements(n)
		default:
			return true
		}
		typ := eventTypeOf(name, args)
		if typ == "" {
			return true
		}
		mark := func(keys ...string) {
			for _, k := range keys {
				if e := a.consts[k]; e != nil {
					e.types[typ] = true
				}
			}
		}
		for _, arg := range args {
			k := a.ref(dir, imports, arg)
			mark(k)
			switch arg := arg.(type) {
			case *ast.Ident:
				for _, fn := range assigned[arg.Name] {
					mark(a.returns[fn]...)
				}
			case *ast.SelectorExpr:
				if a.consts[k] == nil {
					mark(a.fields[dir+"."+arg.Sel.Name]...)
				}
			case *ast.CallExpr:
				mark(a.returns[a.callee(dir, imports, arg)]...)
			}
		}
		return true
	})
}

// elements are a composite literal's values.
func elements(lit *ast.CompositeLit) []ast.Expr {
	var out []ast.Expr
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			e = kv.Value
		}
		out = append(out, e)
	}
	return out
}
