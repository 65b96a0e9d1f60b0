package docgen

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/raygate/raygate/internal/app"
)

// flagsPage documents the manager's flags as Options.BindFlags registers them (name, type,
// default and usage are the flag set's own), KubeRay's flag names it accepts, and the
// environment variables the operator reads (from their constants' comments).
func flagsPage(root string) (File, error) {
	o := app.DefaultOptions()
	fs := pflag.NewFlagSet("raygate", pflag.ContinueOnError)
	o.BindFlags(fs)
	aliases := app.KubeRayFlagAliases()
	isAlias := map[string]bool{}
	for _, a := range aliases {
		isAlias[a.Name] = true
	}

	p := newPage("Manager flags and environment", "internal/app (Options.BindFlags, KubeRayFlagAliases, the Env constants)")
	p.para("The flags of the raygate manager as `internal/app` registers them (`bin/raygate --help` prints them too). " +
		"The Helm chart sets them from its [values](helm-values.md).")
	var rows [][]string
	for _, f := range flagsInOrder(fs) {
		if isAlias[f.Name] {
			continue
		}
		usage := f.Usage
		if f.Name == "feature-gates" {
			// component-base lists every gate of the process, the API server library's
			// included; raygate's are in their own table.
			usage, _, _ = strings.Cut(usage, ". ")
			usage += "; raygate's gates: [feature gates](feature-gates.md)."
		}
		if f.Deprecated != "" {
			usage = "Deprecated: " + f.Deprecated + "."
		}
		rows = append(rows, []string{code("--" + f.Name), code(f.Value.Type()), flagDefault(f), cell(usage)})
	}
	p.table([]string{"flag", "type", "default", "usage"}, rows)

	p.b.WriteString("## KubeRay's flag names\n\n")
	p.para("KubeRay's operator flags are accepted under their own names too (hidden from `--help`), also with one dash " +
		"as Go's flag package reads them; the start logs which raygate flag to use instead, and two names of one setting " +
		"given together are refused. KubeRay's `--health-probe-bind-address`, `--leader-election-namespace`, " +
		"`--reconcile-concurrency`, `--batch-scheduler`, `--enable-batch-scheduler`, `--feature-gates`, `--config` and " +
		"`--kubeconfig` are raygate's names too.")
	rows = nil
	for _, a := range aliases {
		target := "none"
		if a.RaygateFlag != "" {
			target = code("--" + a.RaygateFlag)
		}
		rows = append(rows, []string{code("--" + a.Name), target, cell(a.Note)})
	}
	p.table([]string{"KubeRay flag", "raygate flag", "note"}, rows)

	env, err := envVars(root)
	if err != nil {
		return File{}, err
	}
	p.b.WriteString("## Environment variables\n\n")
	p.para("Read once at start, under the names KubeRay's operator reads; the chart sets `POD_NAMESPACE` from the downward API and the others from `clusterDomain` and `operatorEnv`.")
	p.table([]string{"variable", "meaning"}, env)
	return File{Path: "docs/reference/flags.md", Content: p.String()}, nil
}

// flagsInOrder are the flags in the order BindFlags registers them, which groups related ones.
func flagsInOrder(fs *pflag.FlagSet) []*pflag.Flag {
	fs.SortFlags = false
	var out []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) { out = append(out, f) })
	return out
}

func flagDefault(f *pflag.Flag) string {
	d := f.DefValue
	switch {
	case d == "" || d == "[]":
		return "none"
	case f.Value.Type() == "stringSlice":
		return code(strings.Trim(d, "[]"))
	}
	return code(d)
}

// envVars are the operator's environment variables: the Env constants of internal/app and of
// the RayJob plan, with their comments.
func envVars(root string) ([][]string, error) {
	var rows [][]string
	for _, dir := range []string{"internal/app", "controllers/rayjob/plan"} {
		consts, err := stringConsts(root, dir)
		if err != nil {
			return nil, err
		}
		for _, c := range consts {
			if !strings.HasPrefix(c.Name, "Env") {
				continue
			}
			doc := stripName(c.Doc, c.Name)
			if doc == "" {
				doc = c.Group
			}
			rows = append(rows, []string{code(c.Value), cell(doc)})
		}
	}
	return rows, nil
}

// stripName drops a Go comment's leading identifier ("EnvX is ...", "EnvX, ...").
func stripName(doc, name string) string {
	rest, ok := strings.CutPrefix(doc, name)
	if !ok || strings.HasPrefix(rest, " and ") {
		// Not about this name alone ("EventA and EventB announce ...").
		return doc
	}
	for _, sep := range []string{" is ", " are ", ", ", ": ", " "} {
		if r, ok := strings.CutPrefix(rest, sep); ok {
			rest = r
			break
		}
	}
	return rest
}
