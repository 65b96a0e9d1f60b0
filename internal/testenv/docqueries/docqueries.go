// Package docqueries reads the PromQL examples of the user documentation, so that tests
// evaluate the very text users copy: a doc edit that breaks a query fails the test that runs
// it, and a new example that no test runs fails the coverage check of that test.
//
// It finds the gates of UpgradePolicy examples (every `gates:` list in a ```yaml block, the
// query as YAML reads it, so a folded `>-` query is one line and a `|` query keeps its
// newlines), every ```promql block, and the queries of `curl … --data-urlencode
// 'query=…'` lines in ```sh blocks.
package docqueries

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// GateDocs are the documents whose gate examples the tests run.
var GateDocs = []string{"docs/rayservice.md", "docs/monitoring.md"}

// Kind is where an example was found.
type Kind string

const (
	// Gate is a gate of an UpgradePolicy in a YAML block.
	Gate Kind = "gate"
	// PromQL is a ```promql block.
	PromQL Kind = "promql"
	// Shell is the query of a curl command in a ```sh block.
	Shell Kind = "sh"
)

// Example is one documented query.
type Example struct {
	// Doc is the document, relative to the repository root; Line the first line of the
	// block that holds the example (1-based).
	Doc  string
	Line int
	Kind Kind
	// Heading is the closest Markdown heading above the block.
	Heading string
	// Gate, Min and Max are the gate's name and bounds (Kind Gate only).
	Gate     string
	Min, Max string
	// Query is the query as a user would send it.
	Query string
}

// Where names the example for a failure message: doc:line and the gate or heading.
func (e Example) Where() string {
	if e.Gate != "" {
		return fmt.Sprintf("%s:%d gate %q", e.Doc, e.Line, e.Gate)
	}
	return fmt.Sprintf("%s:%d (%s block under %q)", e.Doc, e.Line, e.Kind, e.Heading)
}

// HasPlaceholders says whether the query uses an UpgradePolicy placeholder ({{namespace}},
// {{pending}}, ...): such a query is a gate's, to be rendered before Prometheus reads it.
func (e Example) HasPlaceholders() bool { return strings.Contains(e.Query, "{{") }

// Read reads the examples of docs (paths relative to the repository root).
func Read(docs ...string) ([]Example, error) {
	var out []Example
	for _, d := range docs {
		text, err := os.ReadFile(filepath.Join(tools.RepoRoot(), d))
		if err != nil {
			return nil, err
		}
		ex, err := Parse(d, text)
		if err != nil {
			return nil, err
		}
		out = append(out, ex...)
	}
	return out, nil
}

// block is a fenced code block.
type block struct {
	lang, heading string
	line          int
	text          string
}

// blocks are the fenced code blocks of a Markdown text, each with its heading.
func blocks(text []byte) []block {
	var out []block
	var cur *block
	var body strings.Builder
	heading := ""
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case cur == nil && fence:
			cur = &block{lang: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")), heading: heading, line: n}
			body.Reset()
		case cur != nil && fence:
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return out
}

// gatesKey finds a `gates:` key in a YAML block.
var gatesKey = regexp.MustCompile(`(?m)^\s*gates:`)

// curlQuery finds the query of `--data-urlencode 'query=…'` in a shell block.
var curlQuery = regexp.MustCompile(`'query=([^']+)'`)

// Parse finds the examples of one Markdown document named doc.
func Parse(doc string, text []byte) ([]Example, error) {
	var out []Example
	for _, b := range blocks(text) {
		base := Example{Doc: doc, Line: b.line, Heading: b.heading}
		switch b.lang {
		case "yaml", "yml":
			if !gatesKey.MatchString(b.text) {
				continue // other YAML examples need not parse alone (they may hold "...")
			}
			gates, err := yamlGates(b.text)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", doc, b.line, err)
			}
			for _, g := range gates {
				e := base
				e.Kind, e.Gate, e.Query, e.Min, e.Max = Gate, g.Name, g.Query, g.Min, g.Max
				out = append(out, e)
			}
		case "promql":
			e := base
			e.Kind, e.Query = PromQL, b.text
			out = append(out, e)
		case "sh", "bash", "console":
			for _, m := range curlQuery.FindAllStringSubmatch(b.text, -1) {
				e := base
				e.Kind, e.Query = Shell, m[1]
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// gate is an UpgradePolicy gate as a YAML example writes it.
type gate struct {
	Name  string `json:"name"`
	Query string `json:"query"`
	Min   string `json:"min"`
	Max   string `json:"max"`
}

// yamlGates are the gates of every `gates:` list of a YAML block's documents, at any depth
// (a whole UpgradePolicy, or a fragment that starts at `gates:`).
func yamlGates(text string) ([]gate, error) {
	var out []gate
	for i, doc := range splitDocuments(text) {
		var tree any
		if err := yaml.Unmarshal([]byte(doc), &tree); err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", i+1, err)
		}
		var walk func(any) error
		walk = func(n any) error {
			switch t := n.(type) {
			case map[string]any:
				for k, v := range t {
					if k == "gates" {
						list, ok := v.([]any)
						if !ok {
							return fmt.Errorf("gates is a %T, not a list", v)
						}
						for j, item := range list {
							g, err := asGate(item)
							if err != nil {
								return fmt.Errorf("gates[%d]: %w", j, err)
							}
							out = append(out, g)
						}
						continue
					}
					if err := walk(v); err != nil {
						return err
					}
				}
			case []any:
				for _, v := range t {
					if err := walk(v); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(tree); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func asGate(item any) (gate, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return gate{}, fmt.Errorf("a %T, not a gate", item)
	}
	str := func(key string) (string, error) {
		switch v := m[key].(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		default:
			return "", fmt.Errorf("%s is a %T, not a string", key, v)
		}
	}
	var g gate
	var err error
	if g.Name, err = str("name"); err != nil {
		return gate{}, err
	}
	if g.Query, err = str("query"); err != nil {
		return gate{}, err
	}
	if g.Min, err = str("min"); err != nil {
		return gate{}, err
	}
	if g.Max, err = str("max"); err != nil {
		return gate{}, err
	}
	if g.Name == "" || g.Query == "" {
		return gate{}, fmt.Errorf("a gate needs a name and a query: %v", m)
	}
	return g, nil
}

// splitDocuments splits a YAML stream at its `---` lines.
func splitDocuments(text string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}
