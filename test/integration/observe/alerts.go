package observe

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// ruleFile is Prometheus's rule file format: what the Prometheus Operator writes for a
// PrometheusRule's spec.groups, and what promtool checks and tests.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string           `json:"name"`
	Rules []map[string]any `json:"rules"`
}

// renderRules renders the chart's PrometheusRule with helm as an admin enables it (release
// raygate in raygate-system, default thresholds) and returns its groups as a rule file.
func renderRules(helm, chartDir string) ([]byte, ruleFile, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(helm, "template", "raygate", chartDir, "--namespace", "raygate-system",
		"--set", "metrics.prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, ruleFile{}, fmt.Errorf("helm template: %w\n%s", err, errb.String())
	}
	return rulesOfPrometheusRule(out.Bytes())
}

// rulesOfPrometheusRule reads a rendered PrometheusRule manifest and returns its groups as
// a rule file.
func rulesOfPrometheusRule(manifest []byte) ([]byte, ruleFile, error) {
	var obj struct {
		Kind string   `json:"kind"`
		Spec ruleFile `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &obj); err != nil {
		return nil, ruleFile{}, err
	}
	if obj.Kind != "PrometheusRule" {
		return nil, ruleFile{}, fmt.Errorf("the manifest is a %q, not a PrometheusRule", obj.Kind)
	}
	if len(obj.Spec.Groups) == 0 {
		return nil, ruleFile{}, fmt.Errorf("the PrometheusRule has no groups")
	}
	out, err := yaml.Marshal(obj.Spec)
	return out, obj.Spec, err
}

// alertNames are the alerts of a rule file, in order.
// alertExprs are the alerts' expressions with runs of white space made one space.
func (f ruleFile) alertExprs() []string {
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if e, ok := r["expr"].(string); ok && r["alert"] != nil {
				out = append(out, normalizeSpace(e))
			}
		}
	}
	return out
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func (f ruleFile) alertNames() []string {
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if a, ok := r["alert"].(string); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// ruleTestFile is the part of a promtool test file the coverage check reads.
type ruleTestFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name        string           `json:"name"`
		InputSeries []map[string]any `json:"input_series"`
		AlertTests  []struct {
			EvalTime  string           `json:"eval_time"`
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// alertCoverage is what the promtool test files check of one alert.
type alertCoverage struct {
	fires  bool // a case expects it to fire
	silent bool // a case expects no alert, over input series (a healthy series, not no data)
}

// readAlertTests reads the promtool test files of dir: one per alert, named <Alert>.yaml,
// testing that alert only. It returns the files and what they cover.
func readAlertTests(dir string) ([]string, map[string]alertCoverage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	cov := map[string]alertCoverage{}
	for _, path := range files {
		alert := strings.TrimSuffix(filepath.Base(path), ".yaml")
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		var f ruleTestFile
		if err := yaml.Unmarshal(raw, &f); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if !slices.Equal(f.RuleFiles, []string{renderedRulesFile}) {
			return nil, nil, fmt.Errorf("%s: rule_files must be [%s] (the rendered chart's rules), not %q", path, renderedRulesFile, f.RuleFiles)
		}
		c := cov[alert]
		for _, t := range f.Tests {
			for _, a := range t.AlertTests {
				if a.Alertname != alert {
					return nil, nil, fmt.Errorf("%s: test %q checks %s: a file tests only the alert it is named after", path, t.Name, a.Alertname)
				}
				switch {
				case len(a.ExpAlerts) > 0:
					c.fires = true
				case len(t.InputSeries) > 0:
					c.silent = true
				}
			}
		}
		cov[alert] = c
	}
	return files, cov, nil
}

// renderedRulesFile is the name the test files give the rendered rules; the test writes
// them there, beside copies of the test files.
const renderedRulesFile = "rules.yaml"

// untested lists, per alert, what its test file lacks; and the test files of alerts the
// chart does not have.
func untested(alerts []string, cov map[string]alertCoverage) []string {
	var out []string
	for _, a := range alerts {
		c, ok := cov[a]
		switch {
		case !ok:
			out = append(out, a+": no test file "+a+".yaml")
		case !c.fires:
			out = append(out, a+": no case where it fires")
		case !c.silent:
			out = append(out, a+": no case where it stays silent on a healthy series")
		}
	}
	for a := range cov {
		if !slices.Contains(alerts, a) {
			out = append(out, a+".yaml: the chart has no alert "+a)
		}
	}
	slices.Sort(out)
	return out
}
