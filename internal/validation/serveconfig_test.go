package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestServeConfig(t *testing.T) {
	root := field.NewPath("spec", "serveConfigV2")
	cases := map[string]struct {
		config string
		want   field.ErrorList
	}{
		"empty":   {},
		"no apps": {config: "proxy_location: EveryNode\n"},
		"two apps": {config: `
applications:
  - name: fruit
    route_prefix: /fruit
    import_path: fruit.deployment_graph
  - name: math
    route_prefix: /calc
    import_path: conditional_dag.serve_dag
`},
		"one app on the default route": {config: "applications:\n  - name: a\n    import_path: m:app\n"},
		"app without HTTP route":       {config: "applications:\n  - name: a\n    import_path: m:app\n    route_prefix: null\n  - name: b\n    import_path: m:app\n    route_prefix: null\n"},
		"not YAML": {
			config: "applications:\n  - name: a\n   import_path: [\n",
			want:   field.ErrorList{field.Invalid(root, nil, "")},
		},
		"a list, not a mapping": {
			config: "- name: a\n",
			want:   field.ErrorList{field.Invalid(root, nil, "")},
		},
		"applications not a list": {
			config: "applications: fruit\n",
			want:   field.ErrorList{field.Invalid(root.Child("applications"), nil, "")},
		},
		"application not a mapping": {
			config: "applications:\n  - fruit\n",
			want:   field.ErrorList{field.Invalid(root.Child("applications").Index(0), nil, "")},
		},
		"missing name and import_path": {
			config: "applications:\n  - route_prefix: /a\n  - name: ''\n    import_path: ' '\n    route_prefix: /b\n",
			want: field.ErrorList{
				field.Required(root.Child("applications").Index(0).Child("name"), ""),
				field.Required(root.Child("applications").Index(0).Child("import_path"), ""),
				field.Required(root.Child("applications").Index(1).Child("name"), ""),
				field.Required(root.Child("applications").Index(1).Child("import_path"), ""),
			},
		},
		"duplicate names and routes": {
			config: "applications:\n  - {name: a, import_path: m:app, route_prefix: /x}\n  - {name: a, import_path: m:app, route_prefix: /x}\n",
			want: field.ErrorList{
				field.Duplicate(root.Child("applications").Index(1).Child("name"), nil),
				field.Duplicate(root.Child("applications").Index(1).Child("route_prefix"), nil),
			},
		},
		"two apps on the default route": {
			config: "applications:\n  - {name: a, import_path: m:app}\n  - {name: b, import_path: m:app, route_prefix: /}\n",
			want:   field.ErrorList{field.Duplicate(root.Child("applications").Index(1).Child("route_prefix"), nil)},
		},
		"route without leading slash": {
			config: "applications:\n  - {name: a, import_path: m:app, route_prefix: api}\n",
			want:   field.ErrorList{field.Invalid(root.Child("applications").Index(0).Child("route_prefix"), nil, "")},
		},
		"wrong types": {
			config: "applications:\n  - {name: 1, import_path: [a], route_prefix: 2}\n",
			want: field.ErrorList{
				field.Invalid(root.Child("applications").Index(0).Child("name"), nil, ""),
				field.Invalid(root.Child("applications").Index(0).Child("import_path"), nil, ""),
				field.Invalid(root.Child("applications").Index(0).Child("route_prefix"), nil, ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, validateServeConfig(tc.config, root))
		})
	}
}

func TestServeConfigYAMLErrorNamesTheLine(t *testing.T) {
	errs := validateServeConfig("applications:\n  - name: a\n    import_path: m:app\n  route_prefix: /a\n", field.NewPath("spec", "serveConfigV2"))
	want := "spec.serveConfigV2: Invalid value: must be valid YAML: yaml: line 3: did not find expected '-' indicator"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}
