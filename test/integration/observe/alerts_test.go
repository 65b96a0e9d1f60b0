package observe

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// alertTestsDir holds one promtool test file per alert of the chart's PrometheusRule.
const alertTestsDir = "testdata/alerts"

// TestAlertRules renders the chart's PrometheusRule as an admin enables it, and runs
// promtool on its groups: `check rules`, then `test rules` with the files of testdata/alerts,
// where every alert fires on the failure it is about, with the labels and annotations its
// receivers get, and stays silent on a healthy series. An alert without such a file fails.
func TestAlertRules(t *testing.T) {
	promtool, err := tools.Path("promtool")
	if err != nil {
		t.Fatal(err)
	}
	helm, err := tools.Path("helm")
	if err != nil {
		t.Fatal(err)
	}
	rules, file, err := renderRules(helm, filepath.Join(tools.RepoRoot(), "charts", "raygate"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	rulesPath := filepath.Join(dir, renderedRulesFile)
	if err := os.WriteFile(rulesPath, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("promtool check rules:\n%s", run(t, promtool, "check", "rules", rulesPath))

	testFiles, cov, err := readAlertTests(alertTestsDir)
	if err != nil {
		t.Fatal(err)
	}
	alerts := file.alertNames()
	if len(alerts) == 0 {
		t.Fatal("the rendered PrometheusRule has no alerts")
	}
	for _, missing := range untested(alerts, cov) {
		t.Errorf("%s (%s)", missing, alertTestsDir)
	}

	// promtool reads rule_files relative to each test file: the copies sit beside the
	// rendered rules.
	args := []string{"test", "rules"}
	for _, f := range testFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(cp, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, cp)
	}
	t.Logf("promtool test rules:\n%s", run(t, promtool, args...))
}

// run runs a tool and returns its standard output; a failure fails the test with both outputs.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

func TestUntested(t *testing.T) {
	alerts := []string{"A", "B", "C", "D"}
	cov := map[string]alertCoverage{
		"A": {fires: true, silent: true},
		"B": {fires: true},
		"C": {silent: true},
		"E": {fires: true, silent: true},
	}
	want := []string{
		"B: no case where it stays silent on a healthy series",
		"C: no case where it fires",
		"D: no test file D.yaml",
		"E.yaml: the chart has no alert E",
	}
	if got := untested(alerts, cov); !slices.Equal(got, want) {
		t.Errorf("untested() =\n  %q\nwant\n  %q", got, want)
	}
}

func TestReadAlertTests(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, "Down.yaml", `
rule_files: [rules.yaml]
tests:
- input_series: [{series: 'up{job="x"}', values: '1x5'}]
  alert_rule_test: [{eval_time: 5m, alertname: Down, exp_alerts: []}]
- input_series: []
  alert_rule_test: [{eval_time: 5m, alertname: Down, exp_alerts: [{exp_labels: {severity: critical}}]}]
`)
	write(dir, "Quiet.yaml", `
rule_files: [rules.yaml]
tests:
- input_series: []
  alert_rule_test: [{eval_time: 5m, alertname: Quiet, exp_alerts: []}]
`)
	files, cov, err := readAlertTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Errorf("files = %q", files)
	}
	want := map[string]alertCoverage{"Down": {fires: true, silent: true}, "Quiet": {}}
	if !maps.Equal(cov, want) {
		t.Errorf("coverage = %+v, want %+v (silence on no input series is not a healthy series)", cov, want)
	}

	write(dir, "Other.yaml", `
rule_files: [rules.yaml]
tests:
- alert_rule_test: [{eval_time: 5m, alertname: Down, exp_alerts: []}]
`)
	if _, _, err := readAlertTests(dir); err == nil || !strings.Contains(err.Error(), "only the alert it is named after") {
		t.Errorf("a file testing another alert: err = %v", err)
	}
	write(dir, "Other.yaml", "rule_files: [../../charts/rules.yaml]\n")
	if _, _, err := readAlertTests(dir); err == nil || !strings.Contains(err.Error(), "rule_files") {
		t.Errorf("a file testing other rules: err = %v", err)
	}
}
