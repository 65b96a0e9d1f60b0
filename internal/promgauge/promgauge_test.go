package promgauge

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSetConditionKeepsOneSeries(t *testing.T) {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_condition_ready", Help: "h"}, []string{"name", "condition"})
	for _, step := range []struct {
		on   bool
		want string
	}{
		{false, `x_condition_ready{condition="false",name="a"} 1`},
		{true, `x_condition_ready{condition="true",name="a"} 1`},
		{true, `x_condition_ready{condition="true",name="a"} 1`},
		{false, `x_condition_ready{condition="false",name="a"} 1`},
	} {
		SetCondition(v, step.on, "a")
		want := "# HELP x_condition_ready h\n# TYPE x_condition_ready gauge\n" + step.want + "\n"
		if err := testutil.CollectAndCompare(v, strings.NewReader(want)); err != nil {
			t.Fatalf("after SetCondition(%v): %v", step.on, err)
		}
	}
}

func TestRegisterReplacesAnEarlierManagersCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "h"})
	second := prometheus.NewGauge(prometheus.GaugeOpts{Name: "y", Help: "h"})
	if err := Register(reg, first); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, second); err != nil {
		t.Fatalf("a collector with the same descriptors replaces the earlier one: %v", err)
	}
	second.Set(2)
	if got := testutil.ToFloat64(second); got != 2 {
		t.Fatalf("got %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "y"); err != nil || n != 1 {
		t.Fatalf("GatherAndCount = %d, %v; want one series", n, err)
	}
}
