package raysim

import (
	"fmt"
	"sort"
	"strings"
)

// fieldError is one pydantic error: where, what, and pydantic's error type.
type fieldError struct {
	loc  []any
	msg  string
	kind string
}

// validationError renders errors the way Ray's dashboard answers an invalid config: HTTP
// 400 with repr() of the pydantic (v1 API) ValidationError of ServeDeploySchema.
func validationError(errs []fieldError) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		locs := make([]string, 0, len(e.loc))
		for _, l := range e.loc {
			switch v := l.(type) {
			case int:
				locs = append(locs, fmt.Sprint(v))
			default:
				locs = append(locs, fmt.Sprintf("'%v'", v))
			}
		}
		loc := strings.Join(locs, ", ")
		if len(locs) == 1 {
			loc += ","
		}
		parts = append(parts, fmt.Sprintf("{'loc': (%s), 'msg': %s, 'type': '%s'}", loc, pyStr(e.msg), e.kind))
	}
	return fmt.Sprintf("ValidationError(model='ServeDeploySchema', errors=[%s])", strings.Join(parts, ", "))
}

// pyStr quotes like Python's repr of a str: single quotes unless the text has one.
func pyStr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// appConfig is the part of a ServeApplicationSchema the simulator understands.
type appConfig struct {
	Name        string
	RoutePrefix *string
	ImportPath  string
	Deployments []string
	Raw         map[string]any
}

// deployConfig is a parsed ServeDeploySchema.
type deployConfig struct {
	Applications   []appConfig
	TargetCapacity *float64
}

// parseDeployConfig checks a submitted config with the rules of Ray's ServeDeploySchema
// (required fields, types, import path and route prefix format, unique names and route
// prefixes, target_capacity in [0, 100]) and returns every problem at once, as pydantic does.
func parseDeployConfig(doc map[string]any) (*deployConfig, []fieldError) {
	var errs []fieldError
	cfg := &deployConfig{}
	if tc, ok := doc["target_capacity"]; ok && tc != nil {
		f, isNum := tc.(float64)
		switch {
		case !isNum:
			errs = append(errs, fieldError{loc: []any{"target_capacity"}, msg: "value is not a valid float", kind: "type_error.float"})
		case f < 0:
			errs = append(errs, fieldError{loc: []any{"target_capacity"}, msg: "ensure this value is greater than or equal to 0", kind: "value_error.number.not_ge"})
		case f > 100:
			errs = append(errs, fieldError{loc: []any{"target_capacity"}, msg: "ensure this value is less than or equal to 100", kind: "value_error.number.not_le"})
		default:
			cfg.TargetCapacity = &f
		}
	}
	rawApps, ok := doc["applications"]
	if !ok {
		return cfg, append(errs, fieldError{loc: []any{"applications"}, msg: "field required", kind: "value_error.missing"})
	}
	list, ok := rawApps.([]any)
	if !ok {
		return cfg, append(errs, fieldError{loc: []any{"applications"}, msg: "value is not a valid list", kind: "type_error.list"})
	}
	appsValid := true
	for i, raw := range list {
		app, appErrs := parseApp(i, raw)
		errs = append(errs, appErrs...)
		if len(appErrs) > 0 {
			appsValid = false
			continue
		}
		cfg.Applications = append(cfg.Applications, app)
	}
	if appsValid {
		errs = append(errs, crossAppErrors(cfg.Applications)...)
	}
	return cfg, errs
}

func parseApp(i int, raw any) (appConfig, []fieldError) {
	loc := func(f ...any) []any { return append([]any{"applications", i}, f...) }
	m, ok := raw.(map[string]any)
	if !ok {
		return appConfig{}, []fieldError{{loc: loc(), msg: "value is not a valid dict", kind: "type_error.dict"}}
	}
	app := appConfig{Name: "default", Raw: m}
	def := "/"
	app.RoutePrefix = &def
	var errs []fieldError
	if v, ok := m["name"]; ok {
		if s, isStr := v.(string); isStr {
			app.Name = s
		} else {
			errs = append(errs, fieldError{loc: loc("name"), msg: "str type expected", kind: "type_error.str"})
		}
	}
	switch v := m["import_path"].(type) {
	case nil:
		errs = append(errs, fieldError{loc: loc("import_path"), msg: "field required", kind: "value_error.missing"})
	case string:
		if msg := importPathProblem(v); msg != "" {
			errs = append(errs, fieldError{loc: loc("import_path"), msg: msg, kind: "value_error"})
		}
		app.ImportPath = v
	default:
		errs = append(errs, fieldError{loc: loc("import_path"), msg: "str type expected", kind: "type_error.str"})
	}
	if v, present := m["route_prefix"]; present {
		switch p := v.(type) {
		case nil:
			app.RoutePrefix = nil
		case string:
			if msg := routePrefixProblem(p); msg != "" {
				errs = append(errs, fieldError{loc: loc("route_prefix"), msg: msg, kind: "value_error"})
			}
			app.RoutePrefix = &p
		default:
			errs = append(errs, fieldError{loc: loc("route_prefix"), msg: "str type expected", kind: "type_error.str"})
		}
	}
	if v, present := m["deployments"]; present {
		ds, isList := v.([]any)
		if !isList {
			errs = append(errs, fieldError{loc: loc("deployments"), msg: "value is not a valid list", kind: "type_error.list"})
		}
		for j, d := range ds {
			dm, isMap := d.(map[string]any)
			name, isStr := dm["name"].(string)
			if !isMap || !isStr {
				errs = append(errs, fieldError{loc: loc("deployments", j, "name"), msg: "field required", kind: "value_error.missing"})
				continue
			}
			app.Deployments = append(app.Deployments, name)
		}
	}
	if _, present := m["host"]; present {
		errs = append(errs, fieldError{loc: []any{"__root__"}, msg: fmt.Sprintf(`Host "%v" is set in the config for application `+"`%s`"+`. Please remove it and set host in the top level deploy config only.`, m["host"], app.Name), kind: "value_error"})
	}
	if _, present := m["port"]; present {
		errs = append(errs, fieldError{loc: []any{"__root__"}, msg: fmt.Sprintf(`Port %v is set in the config for application `+"`%s`"+`. Please remove it and set port in the top level deploy config only.`, m["port"], app.Name), kind: "value_error"})
	}
	return app, errs
}

func importPathProblem(v string) string {
	bad := fmt.Sprintf("Got invalid import path %q. ", v)
	if strings.Contains(v, ":") {
		switch {
		case strings.Count(v, ":") > 1:
			return bad + "An import path may have at most one colon."
		case strings.HasPrefix(v, ":") || strings.HasSuffix(v, ":"):
			return bad + "An import path may not start or end with a colon."
		}
		return ""
	}
	switch {
	case !strings.Contains(v, "."):
		return bad + `An import path must contain at least on dot or colon separating the module (and potentially submodules) from the deployment graph. E.g.: "module.deployment_graph".`
	case strings.HasPrefix(v, ".") || strings.HasSuffix(v, "."):
		return bad + "An import path may not start or end with a dot."
	}
	return ""
}

func routePrefixProblem(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf(`The route_prefix must start with a forward slash ("/"), got %q.`, p)
	case p != "/" && strings.HasSuffix(p, "/"):
		return fmt.Sprintf(`The route_prefix must not end with a forward slash ("/"), got %q.`, p)
	case strings.ContainsAny(p, "{}"):
		return fmt.Sprintf(`The route_prefix may not contain wildcards, got %q.`, p)
	}
	return ""
}

func crossAppErrors(apps []appConfig) []fieldError {
	var errs []fieldError
	names := map[string]int{}
	routes := map[string]int{}
	for _, a := range apps {
		names[a.Name]++
		if a.RoutePrefix != nil {
			routes[*a.RoutePrefix]++
		}
		if a.Name == "" {
			errs = append(errs, fieldError{loc: []any{"applications"}, msg: "Application names must be nonempty.", kind: "value_error"})
		}
	}
	if d := duplicates(names); len(d) > 0 {
		what := "application "
		if len(d) > 1 {
			what = "applications "
		}
		errs = append(errs, fieldError{loc: []any{"applications"}, msg: fmt.Sprintf("Found multiple configs for %s%s. Please remove all duplicates.", what, strings.Join(d, ", ")), kind: "value_error"})
	}
	if d := duplicates(routes); len(d) > 0 {
		what := "route prefix "
		if len(d) > 1 {
			what = "route prefixes "
		}
		errs = append(errs, fieldError{loc: []any{"applications"}, msg: fmt.Sprintf("Found duplicate applications for %s%s. Please ensure each application's route_prefix is unique.", what, strings.Join(d, ", ")), kind: "value_error"})
	}
	return errs
}

func duplicates(counts map[string]int) []string {
	var d []string
	for k, n := range counts {
		if n > 1 {
			d = append(d, fmt.Sprintf("%q", k))
		}
	}
	sort.Strings(d)
	return d
}
