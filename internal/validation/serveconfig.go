package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// defaultRoutePrefix is Ray Serve's route_prefix for an application that does not set one.
const defaultRoutePrefix = "/"

// omit leaves the value out of an error message (the whole serve config would be noise).
var omit = field.OmitValueType{}

// validateServeConfig checks serveConfigV2: it must be YAML, and each application needs a
// unique non-empty name, an import_path, and a unique route_prefix starting with "/".
// Paths below spec.serveConfigV2 follow the YAML keys, e.g.
// spec.serveConfigV2.applications[1].route_prefix.
func validateServeConfig(config string, path *field.Path) field.ErrorList {
	if strings.TrimSpace(config) == "" {
		return nil
	}
	var doc any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		// The YAML error names the line, e.g. "yaml: line 3: mapping values are not allowed".
		return field.ErrorList{field.Invalid(path, omit, "must be valid YAML: "+yamlError(err))}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, omit, "must be a YAML mapping with an applications list, not "+kindOf(doc))}
	}
	appsPath := path.Child("applications")
	raw, ok := top["applications"]
	if !ok || raw == nil {
		return nil
	}
	apps, ok := raw.([]any)
	if !ok {
		return field.ErrorList{field.Invalid(appsPath, omit, "must be a list of applications, not "+kindOf(raw))}
	}
	var errs field.ErrorList
	names, routes := map[string]bool{}, map[string]bool{}
	for i, a := range apps {
		appPath := appsPath.Index(i)
		app, ok := a.(map[string]any)
		if !ok {
			errs = append(errs, field.Invalid(appPath, omit, "must be a mapping with name, import_path and route_prefix, not "+kindOf(a)))
			continue
		}
		errs = append(errs, validateAppName(app, names, appPath.Child("name"))...)
		errs = append(errs, validateImportPath(app, appPath.Child("import_path"))...)
		errs = append(errs, validateRoutePrefix(app, routes, appPath.Child("route_prefix"))...)
	}
	return errs
}

func validateAppName(app map[string]any, seen map[string]bool, path *field.Path) field.ErrorList {
	name, isString := app["name"].(string)
	switch {
	case app["name"] == nil || (isString && strings.TrimSpace(name) == ""):
		return field.ErrorList{field.Required(path, "every application needs a name")}
	case !isString:
		return field.ErrorList{field.Invalid(path, omit, "must be a string, not "+kindOf(app["name"]))}
	case seen[name]:
		return field.ErrorList{field.Duplicate(path, name)}
	}
	seen[name] = true
	return nil
}

func validateImportPath(app map[string]any, path *field.Path) field.ErrorList {
	v, isString := app["import_path"].(string)
	switch {
	case app["import_path"] == nil || (isString && strings.TrimSpace(v) == ""):
		return field.ErrorList{field.Required(path, "every application needs an import_path, e.g. module.submodule:app")}
	case !isString:
		return field.ErrorList{field.Invalid(path, omit, "must be a string, not "+kindOf(app["import_path"]))}
	}
	return nil
}

// validateRoutePrefix: a missing route_prefix means "/" in Ray Serve and counts for
// uniqueness; an explicit null means the application takes no HTTP traffic.
func validateRoutePrefix(app map[string]any, seen map[string]bool, path *field.Path) field.ErrorList {
	raw, present := app["route_prefix"]
	if present && raw == nil {
		return nil
	}
	prefix := defaultRoutePrefix
	if present {
		s, ok := raw.(string)
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

// yamlError drops the converter's wrapping so users read the parser's own words.
func yamlError(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: while decoding JSON: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	default:
		return "a scalar"
	}
}
