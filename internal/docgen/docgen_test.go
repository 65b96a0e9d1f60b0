package docgen

import (
	"go/ast"
	"go/parser"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCellAndCode(t *testing.T) {
	for _, tc := range []struct{ in, cell, code string }{
		{"plain text", "plain text", "`plain text`"},
		{"a | b", `a \| b`, "`a \\| b`"},
		{"<namespace>/*", `&lt;namespace&gt;/\*`, "`<namespace>/*`"},
		{"two\nlines", "two lines", "`two lines`"},
		{"", "", "`\"\"`"},
		{"has `tick`", "has `tick`", "`` has `tick` ``"},
	} {
		if got := cell(tc.in); got != tc.cell {
			t.Errorf("cell(%q) = %q, want %q", tc.in, got, tc.cell)
		}
		if got := code(tc.in); got != tc.code {
			t.Errorf("code(%q) = %q, want %q", tc.in, got, tc.code)
		}
	}
}

func TestStripName(t *testing.T) {
	for _, tc := range []struct{ doc, name, want string }{
		{"EnvX is the namespace.", "EnvX", "the namespace."},
		{`EnvX, "false" (any case), turns it off.`, "EnvX", `"false" (any case), turns it off.`},
		{"EventA: a failure.", "EventA", "a failure."},
		{"EventA and EventB announce it.", "EventA", "EventA and EventB announce it."},
		{"Something else.", "EventA", "Something else."},
	} {
		if got := stripName(tc.doc, tc.name); got != tc.want {
			t.Errorf("stripName(%q, %q) = %q, want %q", tc.doc, tc.name, got, tc.want)
		}
	}
}

func TestHelmDocComment(t *testing.T) {
	for _, tc := range []struct{ comment, want string }{
		{"# -- One line.", "One line."},
		{"# -- First\n# second.", "First second."},
		{"# Section prose.\n\n# -- The value.", "The value."},
		{"# Old paragraph.\n\n# Section prose\n# on two lines.", "Section prose on two lines."},
		{"", ""},
	} {
		if got := helmDocComment(tc.comment); got != tc.want {
			t.Errorf("helmDocComment(%q) = %q, want %q", tc.comment, got, tc.want)
		}
	}
}

func TestDescribeReadsVectorsAndCollectors(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: `says "hi"`}, []string{"a", "b"})
	ms, err := describe(vec)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].name != "x_total" || ms[0].typ != "counter" || ms[0].help != `says "hi"` || len(ms[0].labels) != 2 {
		t.Errorf("describe(counter vec) = %+v", ms)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "h"})
	ms, err = describe(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].typ != "gauge" || len(ms[0].labels) != 0 {
		t.Errorf("describe(gauge) = %+v", ms)
	}
}

func TestEventTypeOf(t *testing.T) {
	for _, tc := range []struct{ fn, arg, want string }{
		{"warnAbout", "x", "Warning"},
		{"NormalEvent", "x", "Normal"},
		{"Eventf", "corev1.EventTypeWarning", "Warning"},
		{"Eventf", "corev1.EventTypeNormal", "Normal"},
		{"Eventf", "reason", ""},
	} {
		arg, err := parser.ParseExpr(tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventTypeOf(tc.fn, []ast.Expr{arg}); got != tc.want {
			t.Errorf("eventTypeOf(%s, %s) = %q, want %q", tc.fn, tc.arg, got, tc.want)
		}
	}
}
