package validation

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/raygate/raygate/test/builders"
)

func TestServeConfig(t *testing.T) {
	root := field.NewPath("spec", "serveConfigV2")
	cases := map[string]struct {
		config string
		want   field.ErrorList
	}{
		"empty":                {},
		"no apps":              {config: "proxy_location: EveryNode\n"},
		"proxy ports in range": {config: "http_options:\n  port: 8000\ngrpc_options:\n  port: 9000\n"},
		"http port out of range": {
			config: "http_options:\n  host: 0.0.0.0\n  port: 99999\n",
			want:   field.ErrorList{field.Invalid(root.Child("http_options", "port"), nil, "")},
		},
		"grpc port not a number, http port zero": {
			config: "http_options:\n  port: 0\ngrpc_options:\n  port: eight\napplications: []\n",
			want: field.ErrorList{field.Invalid(root.Child("http_options", "port"), nil, ""),
				field.Invalid(root.Child("grpc_options", "port"), nil, "")},
		},
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
		"blank name and missing import_path": {
			config: "applications:\n  - route_prefix: /a\n  - name: ''\n    import_path: ' '\n    route_prefix: /b\n  - {name: null, import_path: m:c, route_prefix: /c}\n",
			want: field.ErrorList{
				field.Required(root.Child("applications").Index(0).Child("import_path"), ""),
				field.Required(root.Child("applications").Index(1).Child("name"), ""),
				field.Required(root.Child("applications").Index(1).Child("import_path"), ""),
				field.Required(root.Child("applications").Index(2).Child("name"), ""),
			},
		},
		"no name: Ray Serve's default": {config: "applications:\n  - import_path: m:app\n"},
		"two apps without name are both default": {
			config: "applications:\n  - {import_path: m:a, route_prefix: /a}\n  - {import_path: m:b, route_prefix: /b}\n",
			want:   field.ErrorList{field.Duplicate(root.Child("applications").Index(1).Child("name"), nil)},
		},
		"an app without name and one named default": {
			config: "applications:\n  - {import_path: m:a, route_prefix: /a}\n  - {name: default, import_path: m:b, route_prefix: /b}\n",
			want:   field.ErrorList{field.Duplicate(root.Child("applications").Index(1).Child("name"), nil)},
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

// billionLaughs is ten levels of ten aliases: 10^10 values once expanded, in 400 bytes.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestServeConfigBounds(t *testing.T) {
	root := field.NewPath("spec", "serveConfigV2")
	wideString := strings.Repeat("x", 200<<10)
	cases := map[string]struct {
		config string
		want   string
	}{
		"too long, checked before parsing": {
			config: strings.Repeat("{", MaxServeConfigBytes+1),
			want: "spec.serveConfigV2: Too long: must be at most 262144 bytes (256 KiB), not 262145 bytes; " +
				"keep large files out of the serve config (e.g. in runtime_env.working_dir)",
		},
		"billion laughs": {
			config: billionLaughs(),
			want: "spec.serveConfigV2: Invalid value: has more than 131072 values once YAML aliases are expanded " +
				"(as many as a 262144-byte config written out in full can hold); aliases may repeat parts of the config, not multiply it",
		},
		"a long string repeated by aliases": {
			config: "s: &s " + wideString + "\nl: [*s, *s, *s, *s, *s]\napplications: []\n",
			want: "spec.serveConfigV2: Invalid value: is more than 1048576 bytes (1 MiB) as JSON, the form raygate sends to the Ray dashboard, " +
				"once YAML aliases are expanded",
		},
		"an alias that contains itself": {
			config: "a: &a [*a]\n",
			want:   "spec.serveConfigV2: Invalid value: must be valid YAML: yaml: anchor 'a' value contains itself",
		},
		"too many applications": {
			config: "applications:\n" + strings.Repeat("  - {name: a, import_path: m:a}\n", MaxServeApplications+1),
			want:   "spec.serveConfigV2.applications: Too many: 257: must have at most 256 items",
		},
		"too many deployments": {
			config: "d: &d [" + strings.Repeat("{name: d},", 1099) + "{name: d}]\napplications:\n" +
				"  - {name: a, import_path: m:a, route_prefix: /a, deployments: *d}\n  - {name: b, import_path: m:b, route_prefix: /b, deployments: *d}\n" +
				"  - {name: c, import_path: m:c, route_prefix: /c, deployments: [{name: e}]}\n",
			want: "spec.serveConfigV2.applications: Too many: the applications have 2201 deployments in all; at most 2048 are allowed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := validateServeConfig(tc.config, root)
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Errorf("got %v\nwant %s", errs, tc.want)
			}
		})
	}
	if errs := validateServeConfig(builders.ServeConfigOfSize(MaxServeConfigBytes), root); len(errs) > 0 {
		t.Errorf("a realistic config of the maximum size: %v", errs)
	}
}

// TestServeConfigBoundsAllocateLittle: a 400-byte billion laughs, and an alias bomb of the
// maximum size, are refused without building what they expand to.
func TestServeConfigBoundsAllocateLittle(t *testing.T) {
	root := field.NewPath("spec", "serveConfigV2")
	var bomb strings.Builder
	bomb.WriteString("a: &a [" + strings.Repeat("x,", 1000) + "x]\nb: [")
	for bomb.Len() < MaxServeConfigBytes-10 {
		bomb.WriteString("*a,")
	}
	bomb.WriteString("*a]\n")
	for name, config := range map[string]string{"billion laughs": billionLaughs(), "256 KiB of aliases": bomb.String()} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		errs := validateServeConfig(config, root)
		runtime.ReadMemStats(&after)
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "aliases are expanded") {
			t.Errorf("%s: got %v", name, errs)
		}
		// Parsing the densest 256 KiB (87,000 aliases) into nodes takes about 20 MB;
		// expanding them would take tens of GB.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
			t.Errorf("%s: allocated %d bytes", name, grew)
		}
	}
}

// TestServeConfigReadsScalarsAsTheControllersDo: go-yaml v2's YAML 1.1 rules, merges and
// explicit tags, as sigs.k8s.io/yaml gives the controllers.
func TestServeConfigReadsScalarsAsTheControllersDo(t *testing.T) {
	root := field.NewPath("spec", "serveConfigV2")
	apps := root.Child("applications")
	cases := map[string]struct {
		config string
		want   field.ErrorList
	}{
		"yes is a boolean, 0x1F a number": {
			config: "applications:\n  - {name: yes, import_path: 0x1F}\n",
			want: field.ErrorList{
				field.Invalid(apps.Index(0).Child("name"), nil, ""),
				field.Invalid(apps.Index(0).Child("import_path"), nil, ""),
			},
		},
		"~ is null: no route":       {config: "applications:\n  - {name: a, import_path: m:a, route_prefix: ~}\n  - {name: b, import_path: m:b, route_prefix: ~}\n"},
		"quoted and tagged strings": {config: "applications:\n  - {name: 'yes', import_path: !!str 0x1F, route_prefix: \"/a\"}\n"},
		"a tag that does not fit": {
			config: "applications:\n  - {name: !!int abc}\n",
			want:   field.ErrorList{field.Invalid(root, nil, "")},
		},
		"merged keys, explicit ones win": {
			config: "base: &base {import_path: m:app, route_prefix: /same}\napplications:\n" +
				"  - {<<: *base, name: a}\n  - {<<: *base, name: b, route_prefix: /other}\n  - {<<: [*base], name: c}\n",
			want: field.ErrorList{field.Duplicate(apps.Index(2).Child("route_prefix"), nil)},
		},
		"merging a scalar": {
			config: "applications:\n  - {<<: 1, name: a}\n",
			want:   field.ErrorList{field.Invalid(root, nil, "")},
		},
		"a null key": {
			config: "~: 1\napplications: []\n",
			want:   field.ErrorList{field.Invalid(root, nil, "")},
		},
		"the last duplicate key wins": {config: "applications:\n  - {name: a, name: b, import_path: m:a}\n  - {name: a, import_path: m:a, route_prefix: /a}\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			diffErrors(t, tc.want, validateServeConfig(tc.config, root))
		})
	}
}

func TestServeAppWithoutNameWording(t *testing.T) {
	for config, want := range map[string]string{
		"applications:\n  - {import_path: m:a, route_prefix: /a}\n  - {import_path: m:b, route_prefix: /b}\n": `spec.serveConfigV2.applications[1].name: Duplicate value: "default": applications without name are named "default"`,
		"applications:\n  - {name: '', import_path: m:a}\n":                                                   `spec.serveConfigV2.applications[0].name: Required value: an application's name cannot be empty; leave name out to use Ray Serve's "default"`,
	} {
		errs := validateServeConfig(config, field.NewPath("spec", "serveConfigV2"))
		if len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("config %q:\ngot  %v\nwant %s", config, errs, want)
		}
	}
}
