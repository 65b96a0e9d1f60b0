package raygatectl

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// pluginDoc is the user doc of both kubectl plugins.
var pluginDoc = filepath.Join("..", "..", "docs", "kubectl-plugin.md")

// kubeRayPluginCommands are the commands of KubeRay v1.7's kubectl plugin (kubectl-plugin/pkg/cmd).
var kubeRayPluginCommands = []string{
	"get cluster", "get workergroup", "get node", "get token", "create cluster", "create workergroup",
	"scale cluster", "delete", "log", "session", "job submit", "version",
}

// documentedRaygate finds the `kubectl raygate ...` commands quoted in the doc.
var documentedRaygate = regexp.MustCompile("`kubectl raygate ([^`]+)`")

// Every `kubectl raygate` command and flag the doc names exists in the plugin's command tree,
// and every command of the plugin is documented.
func TestDocumentedCommandsExist(t *testing.T) {
	doc, err := os.ReadFile(pluginDoc)
	if err != nil {
		t.Fatal(err)
	}
	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	documented := map[string]bool{}
	for _, m := range documentedRaygate.FindAllStringSubmatch(string(doc), -1) {
		words := strings.Fields(m[1])
		var path []string
		for _, w := range words {
			if !regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) {
				break
			}
			path = append(path, w)
		}
		cmd, _, err := root.Find(path)
		if err != nil || cmd == root {
			t.Errorf("`kubectl raygate %s`: no such command (%v)", m[1], err)
			continue
		}
		documented[cmd.Name()] = true
		for _, w := range words {
			if name, ok := strings.CutPrefix(w, "--"); ok && cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				t.Errorf("`kubectl raygate %s`: %s has no flag --%s", m[1], cmd.Name(), name)
			}
		}
	}
	for _, cmd := range root.Commands() {
		if builtIn(cmd) {
			continue
		}
		if !documented[cmd.Name()] {
			t.Errorf("kubectl raygate %s is not in %s", cmd.Name(), pluginDoc)
		}
	}
}

// builtIn: cobra's own commands.
func builtIn(cmd *cobra.Command) bool {
	return cmd.Hidden || slices.Contains([]string{"help", "completion"}, cmd.Name())
}

// The doc's table of KubeRay's plugin has a row for every one of its commands.
func TestKubeRayPluginCommandsAreListed(t *testing.T) {
	doc, err := os.ReadFile(pluginDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kubeRayPluginCommands {
		if !strings.Contains(string(doc), "\n| `"+c) {
			t.Errorf("kubectl ray %s has no row in %s", c, pluginDoc)
		}
	}
}
