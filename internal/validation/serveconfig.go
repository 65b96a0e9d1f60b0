package validation

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/internal/rayspec"
)

// defaultRoutePrefix is Ray Serve's route_prefix for an application that does not set one.
const defaultRoutePrefix = "/"

// omit leaves the value out of an error message (the whole serve config would be noise).
var omit = field.OmitValueType{}

// validateServeConfig checks serveConfigV2: at most MaxServeConfigBytes (checked before
// parsing), YAML that stays within MaxServeConfigValues and MaxServeConfigJSONBytes once
// its aliases are expanded, and applications (at most MaxServeApplications, with at most
// MaxServeDeployments deployments in all) that each have a unique name (Ray Serve's
// "default" when left out), an import_path, and a unique route_prefix starting with "/". The document is parsed once.
// Paths below spec.serveConfigV2 follow the YAML keys, e.g.
// spec.serveConfigV2.applications[1].route_prefix.
func validateServeConfig(config string, path *field.Path) field.ErrorList {
	if len(config) > MaxServeConfigBytes {
		e := field.TooLong(path, omit, MaxServeConfigBytes)
		e.Detail = fmt.Sprintf("must be at most %d bytes (%d KiB), not %d bytes; keep large files out of the serve config (e.g. in runtime_env.working_dir)",
			MaxServeConfigBytes, MaxServeConfigBytes>>10, len(config))
		return field.ErrorList{e}
	}
	if strings.TrimSpace(config) == "" {
		return nil
	}
	root, err := parseServeYAML(config)
	if err == nil && root != nil {
		err = measureServeConfig(root)
	}
	if bound := (*errServeConfigBound)(nil); errors.As(err, &bound) {
		return field.ErrorList{field.Invalid(path, omit, bound.detail)}
	}
	if err != nil {
		return field.ErrorList{field.Invalid(path, omit, "must be valid YAML: "+yamlError(config, err))}
	}
	top := deref(root)
	if top == nil || top.Kind != yaml.MappingNode {
		return field.ErrorList{field.Invalid(path, omit, "must be a YAML mapping with an applications list, not "+kindOf(top))}
	}
	errs := validateProxyPorts(top, path)
	appsPath := path.Child("applications")
	apps := lookup(top, "applications")
	if apps == nil || isNull(apps) {
		return errs
	}
	if apps.Kind != yaml.SequenceNode {
		return append(errs, field.Invalid(appsPath, omit, "must be a list of applications, not "+kindOf(apps)))
	}
	if n := len(apps.Content); n > MaxServeApplications {
		return append(errs, field.TooMany(appsPath, n, MaxServeApplications))
	}
	names, routes := map[string]bool{}, map[string]bool{}
	deployments := 0
	for i, a := range apps.Content {
		appPath := appsPath.Index(i)
		app := deref(a)
		if app.Kind != yaml.MappingNode {
			errs = append(errs, field.Invalid(appPath, omit, "must be a mapping with name, import_path and route_prefix, not "+kindOf(app)))
			continue
		}
		errs = append(errs, validateAppName(lookup(app, "name"), names, appPath.Child("name"))...)
		errs = append(errs, validateImportPath(lookup(app, "import_path"), appPath.Child("import_path"))...)
		errs = append(errs, validateRoutePrefix(app, routes, appPath.Child("route_prefix"))...)
		if d := lookup(app, "deployments"); d != nil && d.Kind == yaml.SequenceNode {
			deployments += len(d.Content)
		}
	}
	if deployments > MaxServeDeployments {
		errs = append(errs, &field.Error{Type: field.ErrorTypeTooMany, Field: appsPath.String(), BadValue: omit,
			Detail: fmt.Sprintf("the applications have %d deployments in all; at most %d are allowed", deployments, MaxServeDeployments)})
	}
	return errs
}

// validateAppName: an application without name runs as Ray Serve's "default"
// (rayspec.ServeAppName), which counts for uniqueness; a name that is there must be a
// non-blank string (Ray refuses an empty one).
func validateAppName(name *yaml.Node, seen map[string]bool, path *field.Path) field.ErrorList {
	stated := ""
	if name != nil {
		s, isString := stringOf(name)
		switch {
		case isNull(name) || (isString && strings.TrimSpace(s) == ""):
			return field.ErrorList{field.Required(path, `an application's name cannot be empty; leave name out to use Ray Serve's "`+rayspec.DefaultServeAppName+`"`)}
		case !isString:
			return field.ErrorList{field.Invalid(path, omit, "must be a string, not "+kindOf(name))}
		}
		stated = s
	}
	n := rayspec.ServeAppName(stated)
	if seen[n] {
		e := field.Duplicate(path, n)
		if name == nil {
			e.Detail = `applications without name are named "` + rayspec.DefaultServeAppName + `"`
		}
		return field.ErrorList{e}
	}
	seen[n] = true
	return nil
}

func validateImportPath(v *yaml.Node, path *field.Path) field.ErrorList {
	s, isString := stringOf(v)
	switch {
	case v == nil || isNull(v) || (isString && strings.TrimSpace(s) == ""):
		return field.ErrorList{field.Required(path, "every application needs an import_path, e.g. module.submodule:app")}
	case !isString:
		return field.ErrorList{field.Invalid(path, omit, "must be a string, not "+kindOf(v))}
	}
	return nil
}

// validateRoutePrefix: a missing route_prefix means "/" in Ray Serve and counts for
// uniqueness; an explicit null means the application takes no HTTP traffic.
func validateRoutePrefix(app *yaml.Node, seen map[string]bool, path *field.Path) field.ErrorList {
	raw := lookup(app, "route_prefix")
	present := raw != nil
	if present && isNull(raw) {
		return nil
	}
	prefix := defaultRoutePrefix
	if present {
		s, ok := stringOf(raw)
		if !ok {
			return field.ErrorList{field.Invalid(path, omit, "must be a string, not "+kindOf(raw))}
		}
		if !strings.HasPrefix(s, "/") {
			return field.ErrorList{field.Invalid(path, s, `must start with "/"`)}
		}
		prefix = s
	}
	if seen[prefix] {
		detail := field.Duplicate(path, prefix)
		if !present {
			detail.Detail = `applications without route_prefix use "/"`
		}
		return field.ErrorList{detail}
	}
	seen[prefix] = true
	return nil
}

// lookup returns the value of key in a mapping (aliases followed), as go-yaml v2 builds
// the map: the last explicit occurrence wins, then merged mappings (<<) in order. Nil when
// absent.
func lookup(m *yaml.Node, key string) *yaml.Node {
	var found *yaml.Node
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if isMergeKey(k) {
			merges = append(merges, deref(m.Content[i+1]))
			continue
		}
		if s, ok := stringOf(k); ok && s == key {
			found = m.Content[i+1]
		}
	}
	if found != nil {
		return deref(found)
	}
	for _, merged := range merges {
		sources := []*yaml.Node{merged}
		if merged.Kind == yaml.SequenceNode {
			sources = merged.Content
		}
		for _, src := range sources {
			if src = deref(src); src.Kind == yaml.MappingNode {
				if v := lookup(src, key); v != nil {
					return v
				}
			}
		}
	}
	return nil
}

// stringOf returns a scalar's string value when go-yaml v2 reads it as a string.
func stringOf(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	v, err := resolveScalar(n)
	return v.text, err == nil && v.kind == kindString
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return false
	}
	v, err := resolveScalar(n)
	return err == nil && v.kind == kindNull
}

// yamlError names the line of the mistake, e.g. "yaml: line 3: mapping values are not
// allowed in this context". go-yaml v3 names the line where the enclosing block starts, so
// for a syntax error the text comes from go-yaml v2, the controllers' parser, which names
// the line of the mistake; it reads the document only up to there.
func yamlError(config string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "yaml: line ") {
		var discard struct{}
		if v2err := yamlv2.Unmarshal([]byte(config), &discard); v2err != nil && strings.HasPrefix(v2err.Error(), "yaml: line ") {
			msg = v2err.Error()
		}
	}
	if !strings.HasPrefix(msg, "yaml: ") {
		msg = "yaml: " + msg
	}
	return msg
}

func kindOf(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "null"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v, _ := resolveScalar(n)
	switch v.kind {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindNumber:
		return "a number"
	default:
		return "a string"
	}
}

// validateProxyPorts checks http_options.port and grpc_options.port: Ray's proxies bind
// them, so a port outside 1-65535 (or not a whole number) fails only on the head, after the
// cluster is up, where the user sees a DEPLOY_FAILED application instead of this error.
func validateProxyPorts(top *yaml.Node, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, section := range []string{"http_options", "grpc_options"} {
		opts := lookup(top, section)
		if opts == nil || opts.Kind != yaml.MappingNode {
			continue
		}
		port := lookup(opts, "port")
		if port == nil || isNull(port) {
			continue
		}
		p := path.Child(section, "port")
		v, err := resolveScalar(port)
		if err != nil || port.Kind != yaml.ScalarNode || v.kind != kindNumber {
			errs = append(errs, field.Invalid(p, omit, "must be a port number between 1 and 65535"))
			continue
		}
		n, convErr := strconv.ParseInt(v.raw, 0, 64)
		if convErr != nil || n < 1 || n > 65535 {
			errs = append(errs, field.Invalid(p, v.raw, "must be a port number between 1 and 65535"))
		}
	}
	return errs
}
