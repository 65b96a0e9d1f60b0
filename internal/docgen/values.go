package docgen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// schema is the part of a JSON schema the values table shows.
type schema struct {
	Ref         string             `json:"$ref"`
	Type        any                `json:"type"`
	Description string             `json:"description"`
	Enum        []any              `json:"enum"`
	Properties  map[string]*schema `json:"properties"`
	Items       *schema            `json:"items"`
	OneOf       []*schema          `json:"oneOf"`
	Definitions map[string]*schema `json:"definitions"`
}

// valuesDoc builds the values table: every path of values.yaml, its type from
// values.schema.json, its default from values.yaml and its description from the value's
// `# --` comment (helm-docs' convention; the schema's description when there is none), then
// the schema's values values.yaml leaves unset.
type valuesDoc struct {
	defs map[string]*schema
	rows [][]string
}

const (
	chartDir   = "charts/raygate"
	valuesFile = chartDir + "/values.yaml"
	schemaFile = chartDir + "/values.schema.json"
)

func valuesPage(root string) (File, error) {
	rawSchema, err := readRepoFile(root, schemaFile)
	if err != nil {
		return File{}, err
	}
	var top schema
	if err := json.Unmarshal(rawSchema, &top); err != nil {
		return File{}, fmt.Errorf("%s: %w", schemaFile, err)
	}
	rawValues, err := readRepoFile(root, valuesFile)
	if err != nil {
		return File{}, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(rawValues, &doc); err != nil {
		return File{}, fmt.Errorf("%s: %w", valuesFile, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return File{}, fmt.Errorf("%s: not a mapping", valuesFile)
	}
	v := &valuesDoc{defs: top.Definitions}
	if err := v.walk(doc.Content[0], &top, ""); err != nil {
		return File{}, err
	}
	p := newPage("Helm values", "charts/raygate/values.yaml and values.schema.json")
	p.para("Every value of the `charts/raygate` chart: the type from `values.schema.json` (which refuses unknown keys and " +
		"wrong types), the default from `values.yaml`, the description from the value's comment there. " +
		"Values marked *unset* have no default in `values.yaml`.")
	p.table([]string{"value", "type", "default", "description"}, v.rows)
	return File{Path: "docs/reference/helm-values.md", Content: p.String()}, nil
}

func (v *valuesDoc) resolve(s *schema) *schema {
	for s != nil && s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/definitions/")
		if !ok || v.defs[name] == nil {
			return s
		}
		s = v.defs[name]
	}
	return s
}

func (v *valuesDoc) walk(m *yaml.Node, parent *schema, prefix string) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, val := m.Content[i], m.Content[i+1]
		path := prefix + k.Value
		seen[k.Value] = true
		var s *schema
		if parent != nil && parent.Properties != nil {
			s = v.resolve(parent.Properties[k.Value])
			if s == nil {
				return fmt.Errorf("%s: %s is not in %s", valuesFile, path, schemaFile)
			}
		}
		desc := helmDocComment(k.HeadComment)
		if desc == "" && s != nil {
			desc = s.Description
		}
		if val.Kind == yaml.MappingNode && len(val.Content) > 0 && (s == nil || s.Properties != nil) {
			if desc != "" {
				v.rows = append(v.rows, []string{code(path), "object", "", cell(desc)})
			}
			if err := v.walk(val, s, path+"."); err != nil {
				return err
			}
			continue
		}
		var decoded any
		if err := val.Decode(&decoded); err != nil {
			return fmt.Errorf("%s: %s: %w", valuesFile, path, err)
		}
		v.rows = append(v.rows, []string{code(path), v.typeOf(s, val), renderDefault(decoded), cell(desc)})
	}
	if parent == nil {
		return nil
	}
	var unset []string
	for name := range parent.Properties {
		if !seen[name] {
			unset = append(unset, name)
		}
	}
	sort.Strings(unset)
	for _, name := range unset {
		s := v.resolve(parent.Properties[name])
		v.rows = append(v.rows, []string{code(prefix + name), v.typeOf(s, nil), "*unset*", cell(s.Description)})
	}
	return nil
}

// typeOf is a value's type as the schema says (with its allowed values), else as YAML reads it.
func (v *valuesDoc) typeOf(s *schema, val *yaml.Node) string {
	if s == nil {
		if val == nil {
			return ""
		}
		return cell(strings.TrimPrefix(val.ShortTag(), "!!"))
	}
	var types []string
	add := func(t string) {
		for _, have := range types {
			if have == t {
				return
			}
		}
		types = append(types, t)
	}
	var collect func(s *schema)
	collect = func(s *schema) {
		s = v.resolve(s)
		switch t := s.Type.(type) {
		case string:
			add(t)
		case []any:
			for _, e := range t {
				add(fmt.Sprint(e))
			}
		}
		for _, o := range s.OneOf {
			collect(o)
		}
	}
	collect(s)
	out := strings.Join(types, " or ")
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			vals[i] = string(b)
		}
		out += ": " + strings.Join(vals, ", ")
	}
	for _, o := range s.OneOf {
		if o := v.resolve(o); len(o.Enum) > 0 {
			vals := make([]string, len(o.Enum))
			for i, e := range o.Enum {
				b, _ := json.Marshal(e)
				vals[i] = string(b)
			}
			out += "; " + strings.Join(vals, ", ")
		}
	}
	return cell(out)
}

// renderDefault is a default as compact JSON, which reads as YAML too.
func renderDefault(v any) string {
	if v == nil {
		return code("null")
	}
	if s, ok := v.(string); ok && s != "" && !strings.ContainsAny(s, "\"\\") {
		return code(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return code(fmt.Sprint(v))
	}
	return code(string(b))
}

// helmDocComment is the description in a value's comment: from its `# --` line on (helm-docs'
// convention); else the last paragraph of a plain comment (a section's prose).
func helmDocComment(comment string) string {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return sectionComment(lines)
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if i == 0 {
			l = strings.TrimPrefix(strings.TrimSpace(l), "--")
		}
		words = append(words, strings.TrimSpace(l))
	}
	return strings.Join(words, " ")
}

// sectionComment is the last paragraph of a plain comment above a key.
func sectionComment(lines []string) string {
	var para []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			para = nil
			continue
		}
		para = append(para, strings.TrimSpace(strings.TrimPrefix(l, "#")))
	}
	return strings.Join(para, " ")
}
