// Command webhookconditions adds its matchConditions (webhooks.MatchConditionsFor) to every
// webhook of the configuration controller-gen generates, whose markers cannot express them.
// It replaces conditions already there, so running it twice changes nothing.
//
// Usage: go run ./hack/webhookconditions config/webhook/manifests.yaml
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/webhooks"
)

var separator = regexp.MustCompile(`(?m)^---[ \t]*\n`)

func main() {
	for _, path := range os.Args[1:] {
		if err := addConditions(path); err != nil {
			fmt.Fprintf(os.Stderr, "webhookconditions: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func addConditions(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, doc := range separator.Split(string(data), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return err
		}
		switch obj["kind"] {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _ := obj["webhooks"].([]any)
			for _, h := range hooks {
				hook, ok := h.(map[string]any)
				if !ok {
					continue
				}
				name, _ := hook["name"].(string)
				conditions, err := toPlain(webhooks.MatchConditionsFor(name))
				if err != nil {
					return err
				}
				hook["matchConditions"] = conditions
			}
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// toPlain turns typed values into the maps and lists a YAML document holds.
func toPlain(v any) (any, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	var plain any
	return plain, yaml.Unmarshal(b, &plain)
}
