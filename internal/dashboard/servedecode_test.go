package dashboard_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/validation"
)

func TestAnswerCapsAreAdmissions(t *testing.T) {
	if dashboard.MaxApplications != validation.MaxServeApplications || dashboard.MaxDeployments != validation.MaxServeDeployments {
		t.Fatalf("the dashboard reads %d applications and %d deployments, admission allows %d and %d: keep them equal",
			dashboard.MaxApplications, dashboard.MaxDeployments, validation.MaxServeApplications, validation.MaxServeDeployments)
	}
}

// answer is a Serve status of apps applications with deps deployments each, names made of
// name(i) and every message msg.
func answer(apps, deps int, name func(kind string, i int) string, msg string) []byte {
	var b strings.Builder
	b.WriteString(`{"applications":{`)
	for a := range apps {
		if a > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q:{"status":"RUNNING","message":%q,"deployments":{`, name("app", a), msg)
		for d := range deps {
			if d > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%q:{"status":"HEALTHY","message":%q}`, name("dep", a*deps+d), msg)
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

func short(kind string, i int) string { return fmt.Sprintf("%s%d", kind, i) }

func TestDenseAnswers(t *testing.T) {
	long := func(kind string, i int) string {
		p := short(kind, i)
		return p + strings.Repeat("<", 253-len(p))
	}
	for _, tc := range []struct {
		name   string
		answer []byte
		// refused is what the error says ("": the answer is kept).
		refused string
		// What is kept besides the applications' names and states.
		appMessages, deployments, deploymentMessages bool
	}{
		{name: "the densest answer raygate accepts", answer: raysim.DenseAnswer(dashboard.MaxDeployments)},
		{name: "one deployment more", answer: raysim.DenseAnswer(dashboard.MaxDeployments + 1), refused: "lists more than 2048 Serve deployments"},
		{name: "one application more", answer: answer(dashboard.MaxApplications+1, 0, short, ""), refused: "lists more than 256 Serve applications"},
		{name: "as many deployments as admission allows, short text: all kept",
			answer: answer(dashboard.MaxApplications, dashboard.MaxDeployments/dashboard.MaxApplications, short, "ok"), appMessages: true, deployments: true, deploymentMessages: true},
		{name: "long messages everywhere: the deployments' are left out",
			answer: answer(dashboard.MaxApplications, dashboard.MaxDeployments/dashboard.MaxApplications, short, strings.Repeat("m", 300)), appMessages: true, deployments: true},
		{name: "long names: the deployments are left out",
			answer: answer(dashboard.MaxApplications/2, 2, long, "&"), appMessages: true},
		{name: "long names and messages: only the applications' names and states are kept",
			answer: answer(dashboard.MaxApplications/2, 0, long, strings.Repeat("&", 256))},
		{name: "application names alone too long for a status", answer: answer(dashboard.MaxApplications, 0, long, ""),
			refused: "application names and states that alone would take"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.answer) > dashboard.MaxResponseBytes {
				t.Fatalf("the answer is %d bytes, more than the client reads", len(tc.answer))
			}
			d, err := dashboard.ParseServeDetails(tc.answer)
			if tc.refused != "" {
				var dense *dashboard.DenseError
				if !errors.As(err, &dense) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want a DenseError saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, a := range d.Applications {
				if a.Status != "RUNNING" {
					t.Fatalf("application status %q", a.Status)
				}
				kept["appMessages"] = kept["appMessages"] || a.Message != ""
				kept["deployments"] = kept["deployments"] || len(a.Deployments) > 0
				for _, dep := range a.Deployments {
					kept["deploymentMessages"] = kept["deploymentMessages"] || dep.Message != ""
				}
			}
			want := map[string]bool{"appMessages": tc.appMessages, "deployments": tc.deployments, "deploymentMessages": tc.deploymentMessages}
			for what, w := range want {
				if kept[what] != w {
					t.Errorf("%s kept: %v, want %v", what, kept[what], w)
				}
			}
		})
	}
}

// An answer of a million tiny deployments is read no further than the first one over the
// bound: it costs no more than an answer at the bound.
func TestDenseAnswersAreReadNoFurtherThanTheBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"applications":{"a":{"status":"RUNNING","deployments":{`)
	for i := 0; b.Len() < dashboard.MaxResponseBytes-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%x":{}`, i)
	}
	b.WriteString(`}}}}`)
	data := []byte(b.String())
	allocated := func(parse func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		parse()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	got := allocated(func() {
		if _, err := dashboard.ParseServeDetails(data); err == nil {
			t.Error("an answer of more than 2048 deployments was accepted")
		}
	})
	atBound := allocated(func() {
		if _, err := dashboard.ParseServeDetails(raysim.DenseAnswer(dashboard.MaxDeployments)); err != nil {
			t.Error(err)
		}
	})
	if got > atBound+uint64(4*len(data)) {
		t.Errorf("reading %d bytes of tiny deployments allocated %d KiB, an answer at the bound %d KiB", len(data), got>>10, atBound>>10)
	}
	t.Logf("refused dense answer: %d KiB allocated; answer at the bound: %d KiB", got>>10, atBound>>10)
}
