package validation

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// serveConfigV2 is parsed once per validation into a YAML node tree, in which an alias is a
// pointer to its anchor: repeating a large anchor many times costs nothing until something
// expands it. measureServeConfig computes the expanded size from that tree, sharing the work
// between aliases of the same anchor, and stops at the first bound it crosses, so the
// expansion is never built.
//
// The controllers read serveConfigV2 with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1), so the
// rules read scalars as it does: plain yes/no/on/off are booleans, 0x1F and 017 are
// numbers, and a document it would refuse (an alias that contains itself, a null mapping
// key, a merge of a scalar, a value that does not fit its explicit tag) is refused here too.

// Bounds on serveConfigV2, exported for docs and tests.
const (
	// MaxServeConfigBytes bounds serveConfigV2 itself, in bytes (also the CRD's maxLength,
	// which counts characters).
	MaxServeConfigBytes = 256 << 10
	// MaxServeConfigJSONBytes bounds the JSON form of serveConfigV2, the form raygate sends to
	// the Ray dashboard, with aliases expanded.
	MaxServeConfigJSONBytes = 1 << 20
	// MaxServeConfigValues bounds the number of values (scalars, lists, mappings) once aliases
	// are expanded: as many as the densest MaxServeConfigBytes document without aliases
	// ("[0,0,0,...]") can hold, so aliases can repeat parts of a config but never make it
	// costlier than the largest config written out in full.
	MaxServeConfigValues = MaxServeConfigBytes / 2
	// MaxServeApplications bounds the applications of one serve config.
	MaxServeApplications = 256
	// MaxServeDeployments bounds the deployments of all applications together.
	MaxServeDeployments = 2048
)

// errServeConfigBound is returned by measureServeConfig when a bound is crossed; the
// message says which.
type errServeConfigBound struct{ detail string }

func (e *errServeConfigBound) Error() string { return e.detail }

// parseServeYAML parses a serve config into its root node (nil for an empty document). It
// does not expand aliases.
func parseServeYAML(config string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// serveSize is the expanded size of a node: how many values and how many bytes of JSON.
type serveSize struct{ values, jsonBytes int64 }

// measurer walks a node tree once; anchored nodes are measured once and their size reused
// for every alias.
type measurer struct {
	anchored map[*yaml.Node]*serveSize // nil while the anchor is being measured (a cycle)
	total    serveSize
}

// measureServeConfig checks that the expanded document stays within MaxServeConfigValues
// and MaxServeConfigJSONBytes and that go-yaml v2 would decode it.
func measureServeConfig(root *yaml.Node) error {
	m := &measurer{anchored: map[*yaml.Node]*serveSize{}}
	_, err := m.size(root)
	return err
}

// size returns the expanded size of n and adds it to the running total, failing as soon as
// the total crosses a bound.
func (m *measurer) size(n *yaml.Node) (serveSize, error) {
	if n.Kind == yaml.AliasNode {
		return m.alias(n)
	}
	var s serveSize
	var err error
	switch n.Kind {
	case yaml.ScalarNode:
		var v scalarValue
		if v, err = resolveScalar(n); err == nil {
			s = serveSize{values: 1, jsonBytes: v.jsonLen()}
		}
	case yaml.SequenceNode:
		s, err = m.sequence(n)
	case yaml.MappingNode:
		s, err = m.mapping(n)
	default:
		err = fmt.Errorf("unexpected YAML node kind %d", n.Kind)
	}
	if err != nil {
		return s, err
	}
	if n.Kind == yaml.ScalarNode {
		// Collections added their children one by one already.
		if err := m.add(s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// alias measures an alias: its anchor's size, computed once and added to the total again
// for every further alias.
func (m *measurer) alias(n *yaml.Node) (serveSize, error) {
	target := n.Alias
	if target == nil {
		return serveSize{}, fmt.Errorf("unknown anchor '%s' referenced", n.Value)
	}
	if s, seen := m.anchored[target]; seen {
		if s == nil {
			return serveSize{}, fmt.Errorf("anchor '%s' value contains itself", n.Value)
		}
		return *s, m.add(*s)
	}
	// An alias of an anchor measured inline (not yet in the map) is its first expansion.
	m.anchored[target] = nil
	s, err := m.size(target)
	if err != nil {
		return s, err
	}
	m.anchored[target] = &s
	return s, nil
}

func (m *measurer) sequence(n *yaml.Node) (serveSize, error) {
	s := serveSize{values: 1, jsonBytes: 2 + int64(max(len(n.Content)-1, 0))} // [ ] and commas
	if err := m.add(s); err != nil {
		return s, err
	}
	for _, c := range n.Content {
		cs, err := m.size(c)
		if err != nil {
			return s, err
		}
		s.values, s.jsonBytes = satAdd(s.values, cs.values), satAdd(s.jsonBytes, cs.jsonBytes)
	}
	return m.anchor(n, s), nil
}

func (m *measurer) mapping(n *yaml.Node) (serveSize, error) {
	s := serveSize{values: 1, jsonBytes: 2 + int64(max(len(n.Content)/2-1, 0))} // { } and commas
	if err := m.add(s); err != nil {
		return s, err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			if err := checkMergeValue(v); err != nil {
				return s, err
			}
		} else if err := checkMappingKey(k); err != nil {
			return s, err
		}
		// A merge key's own bytes are not in the JSON, but counting them keeps the walk
		// simple and only overestimates.
		for _, c := range []*yaml.Node{k, v} {
			cs, err := m.size(c)
			if err != nil {
				return s, err
			}
			s.values, s.jsonBytes = satAdd(s.values, cs.values), satAdd(s.jsonBytes, cs.jsonBytes)
		}
		if err := m.add(serveSize{jsonBytes: 1}); err != nil { // the colon
			return s, err
		}
		s.jsonBytes = satAdd(s.jsonBytes, 1)
	}
	return m.anchor(n, s), nil
}

// anchor records the size of an anchored collection measured inline, so later aliases of
// it reuse the size.
func (m *measurer) anchor(n *yaml.Node, s serveSize) serveSize {
	if n.Anchor != "" {
		if _, ok := m.anchored[n]; !ok {
			m.anchored[n] = &s
		}
	}
	return s
}

func (m *measurer) add(s serveSize) error {
	m.total.values = satAdd(m.total.values, s.values)
	m.total.jsonBytes = satAdd(m.total.jsonBytes, s.jsonBytes)
	switch {
	case m.total.values > MaxServeConfigValues:
		return &errServeConfigBound{fmt.Sprintf("has more than %d values once YAML aliases are expanded "+
			"(as many as a %d-byte config written out in full can hold); aliases may repeat parts of the config, not multiply it",
			MaxServeConfigValues, MaxServeConfigBytes)}
	case m.total.jsonBytes > MaxServeConfigJSONBytes:
		return &errServeConfigBound{fmt.Sprintf("is more than %d bytes (%d MiB) as JSON, the form raygate sends to the Ray dashboard, once YAML aliases are expanded",
			MaxServeConfigJSONBytes, MaxServeConfigJSONBytes>>20)}
	}
	return nil
}

// satAdd adds two non-negative counts, stopping at the largest int64 instead of wrapping.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// deref follows an alias to its anchor.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// isMergeKey: a plain "<<" key merges the mappings of its value into the enclosing mapping.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style&yaml.TaggedStyle == 0 &&
		k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

func checkMergeValue(v *yaml.Node) error {
	v = deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		return nil
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if deref(c).Kind != yaml.MappingNode {
				return errors.New("map merge requires map or sequence of maps as the value")
			}
		}
		return nil
	}
	return errors.New("map merge requires map or sequence of maps as the value")
}

// checkMappingKey: JSON keys are strings, so a key must be a scalar other than null.
func checkMappingKey(k *yaml.Node) error {
	if deref(k).Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a mapping key must be a string, number or boolean, not a %s", k.Line, kindName(deref(k)))
	}
	v, err := resolveScalar(deref(k))
	if err == nil && v.kind == kindNull {
		return fmt.Errorf("line %d: a mapping key must not be null", k.Line)
	}
	return err
}

// scalarKind is what go-yaml v2 decodes a scalar as.
type scalarKind int

const (
	kindString scalarKind = iota
	kindNull
	kindBool
	kindNumber
)

type scalarValue struct {
	kind scalarKind
	text string // the string, for kindString
	raw  string // the scalar as written, for other kinds
}

// jsonLen is the length of the value as encoding/json writes it (HTML-safe escaping), or an
// upper bound of it for numbers.
func (v scalarValue) jsonLen() int64 {
	switch v.kind {
	case kindNull, kindBool:
		return 5
	case kindNumber:
		return int64(len(v.raw)) + 8 // 0x10 → 16, 1e3 → 1000, .5 → 0.5: never much longer
	}
	n := int64(2)
	for i := 0; i < len(v.text); {
		r, w := utf8.DecodeRuneInString(v.text[i:])
		switch {
		case r == utf8.RuneError && w == 1, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
			n += 6
		case r == '"', r == '\\', r == '\n', r == '\r', r == '\t':
			n += 2
		case r < 0x20:
			n += 6
		default:
			n += int64(w)
		}
		i += w
	}
	return n
}

var (
	v2Bools = map[string]bool{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "true": true, "True": true, "TRUE": true, "on": true, "On": true, "ON": true,
		"n": true, "N": true, "no": true, "No": true, "NO": true, "false": true, "False": true, "FALSE": true, "off": true, "Off": true, "OFF": true,
	}
	v2Nulls      = map[string]bool{"": true, "~": true, "null": true, "Null": true, "NULL": true}
	v2Floats     = map[string]bool{".nan": true, ".NaN": true, ".NAN": true, ".inf": true, ".Inf": true, ".INF": true, "+.inf": true, "+.Inf": true, "+.INF": true, "-.inf": true, "-.Inf": true, "-.INF": true}
	v2StyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// resolveScalar reads a scalar as go-yaml v2 decodes it into an interface{}: quoted and
// block scalars are strings; plain ones follow YAML 1.1; an explicit standard tag must fit
// the value. One difference remains: YAML's non-specific tag "!" makes v2 keep the text,
// and v3's node tree does not record it. (v2 keeps timestamps as strings in an interface{}, and nothing that starts
// like one, four digits and a dash, parses as a number, so they need no case.)
func resolveScalar(n *yaml.Node) (scalarValue, error) {
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if n.Style&yaml.TaggedStyle == 0 {
		if quoted {
			return scalarValue{kind: kindString, text: n.Value}, nil
		}
		return resolvePlain(n.Value), nil
	}
	switch n.Tag {
	case "!!str", "!!timestamp":
		return scalarValue{kind: kindString, text: n.Value}, nil
	case "!!binary":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
		if err != nil {
			return scalarValue{}, fmt.Errorf("line %d: !!binary value contains invalid base64 data", n.Line)
		}
		return scalarValue{kind: kindString, text: string(b)}, nil
	case "!!null", "!!bool", "!!int", "!!float":
		v := resolvePlain(n.Value)
		want := map[string]scalarKind{"!!null": kindNull, "!!bool": kindBool, "!!int": kindNumber, "!!float": kindNumber}[n.Tag]
		if v.kind != want {
			return scalarValue{}, fmt.Errorf("line %d: cannot decode `%s` as a %s", n.Line, n.Value, n.Tag)
		}
		return v, nil
	}
	// Any other tag: v2 keeps the text.
	return scalarValue{kind: kindString, text: n.Value}, nil
}

// resolvePlain is go-yaml v2's resolution of an untagged plain scalar.
func resolvePlain(s string) scalarValue {
	switch {
	case v2Nulls[s]:
		return scalarValue{kind: kindNull, raw: s}
	case v2Bools[s]:
		return scalarValue{kind: kindBool, raw: s}
	case v2Floats[s]:
		return scalarValue{kind: kindNumber, raw: s}
	}
	str := scalarValue{kind: kindString, text: s}
	switch c := s[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return scalarValue{kind: kindNumber, raw: s}
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return scalarValue{kind: kindNumber, raw: s}
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return scalarValue{kind: kindNumber, raw: s}
		}
		if v2StyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return scalarValue{kind: kindNumber, raw: s}
			}
		}
		for _, prefix := range []string{"0b", "-0b"} {
			if rest, ok := strings.CutPrefix(plain, prefix); ok {
				if _, err := strconv.ParseUint(rest, 2, 64); err == nil {
					return scalarValue{kind: kindNumber, raw: s}
				}
			}
		}
	}
	return str
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return "scalar"
	}
}
