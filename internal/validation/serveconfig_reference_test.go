package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/rayspec"
)

// referenceServeConfig is the serve config validation as it was before serveConfigV2 was
// read through a node tree: sigs.k8s.io/yaml (the controllers' parser) into an interface{},
// then the same rules. FuzzServeConfig checks that validateServeConfig agrees with it on
// every document within the bounds.
func referenceServeConfig(config string, path *field.Path) field.ErrorList {
	if strings.TrimSpace(config) == "" {
		return nil
	}
	var doc any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return field.ErrorList{field.Invalid(path, omit, "must be valid YAML: "+err.Error())}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, omit, "must be a YAML mapping")}
	}
	appsPath := path.Child("applications")
	raw, ok := top["applications"]
	if !ok || raw == nil {
		return nil
	}
	apps, ok := raw.([]any)
	if !ok {
		return field.ErrorList{field.Invalid(appsPath, omit, "must be a list")}
	}
	var errs field.ErrorList
	names, routes := map[string]bool{}, map[string]bool{}
	for i, a := range apps {
		appPath := appsPath.Index(i)
		app, ok := a.(map[string]any)
		if !ok {
			errs = append(errs, field.Invalid(appPath, omit, "must be a mapping"))
			continue
		}
		rawName, named := app["name"]
		name, isString := rawName.(string)
		switch namePath := appPath.Child("name"); {
		case named && (rawName == nil || (isString && strings.TrimSpace(name) == "")):
			errs = append(errs, field.Required(namePath, ""))
		case named && !isString:
			errs = append(errs, field.Invalid(namePath, omit, ""))
		case names[rayspec.ServeAppName(name)]:
			errs = append(errs, field.Duplicate(namePath, rayspec.ServeAppName(name)))
		default:
			names[rayspec.ServeAppName(name)] = true
		}
		ip, isString := app["import_path"].(string)
		switch ipPath := appPath.Child("import_path"); {
		case app["import_path"] == nil || (isString && strings.TrimSpace(ip) == ""):
			errs = append(errs, field.Required(ipPath, ""))
		case !isString:
			errs = append(errs, field.Invalid(ipPath, omit, ""))
		}
		rp, present := app["route_prefix"]
		if present && rp == nil {
			continue
		}
		prefix := defaultRoutePrefix
		rpPath := appPath.Child("route_prefix")
		if present {
			s, ok := rp.(string)
			if !ok || !strings.HasPrefix(s, "/") {
				errs = append(errs, field.Invalid(rpPath, omit, ""))
				continue
			}
			prefix = s
		}
		if routes[prefix] {
			errs = append(errs, field.Duplicate(rpPath, prefix))
			continue
		}
		routes[prefix] = true
	}
	return errs
}
