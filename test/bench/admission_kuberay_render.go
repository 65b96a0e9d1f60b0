package main

import (
	"fmt"
	"strings"
)

// targetAdmissionRatio: raygate's two webhooks (mutating and validating, Pod Security and
// quota checks included) add at most this times what KubeRay's one adds (issue 42).
const targetAdmissionRatio = 1.2

// admissionRatio is raygate's added median latency over KubeRay's for one case at one
// client count; ok is false with the reason when the figures cannot give one.
func admissionRatio(raygate, kuberay admissionLatency) (ratio float64, why string, ok bool) {
	switch {
	case raygate.On.Requests == 0 || kuberay.On.Requests == 0:
		return 0, "no requests", false
	case kuberay.AddedP50Ms <= 0:
		return 0, fmt.Sprintf("KubeRay's added median %.2f ms is within the run's noise", kuberay.AddedP50Ms), false
	}
	return max(raygate.AddedP50Ms, 0) / kuberay.AddedP50Ms, "", true
}

// findCase is the case of kind and operation in cases.
func findCase(cases []admissionCase, kind, op string) (admissionCase, bool) {
	for _, c := range cases {
		if c.Kind == kind && c.Operation == op {
			return c, true
		}
	}
	return admissionCase{}, false
}

// operatorAdmissionVerdicts: for each kind and operation KubeRay validates, at one and
// admissionConcurrency clients, raygate ÷ KubeRay of the median latency each operator's
// webhooks add; for the kinds only raygate validates, what raygate's add (no target).
func operatorAdmissionVerdicts(a *admissionResult) []verdict {
	if a == nil || a.Operators == nil {
		// Results from before the comparison existed: the admission scenario always sets it,
		// and says why a case did not run.
		return nil
	}
	o := a.Operators
	var v []verdict
	for _, kind := range []string{"RayCluster", "RayService"} {
		for _, op := range []string{"create", "update"} {
			rg, rgOK := findCase(o.Raygate.Cases, kind, op)
			kr, krOK := findCase(o.KubeRay.Cases, kind, op)
			for _, clients := range []int{1, admissionConcurrency} {
				pick := func(c admissionCase) admissionLatency {
					if clients == 1 {
						return c.Sequential
					}
					return c.Concurrent
				}
				what := fmt.Sprintf("Admission added by the webhooks, %s %s, %d client%s, raygate ÷ KubeRay v1.5.1 (median)", kind, op, clients, plural(clients))
				target := fmt.Sprintf("≤ %.1f×", targetAdmissionRatio)
				switch {
				case !rgOK:
					v = append(v, notRun(what, target, "raygate: "+orNotRun(o.Raygate.Error)))
				case !krOK && kind == "RayService" && o.KubeRay.Error == "":
					r := pick(rg)
					v = append(v, verdict{fmt.Sprintf("Admission added by raygate's webhooks, %s %s, %d client%s", kind, op, clients, plural(clients)), "— (KubeRay v1.5.1 has no RayService webhook)",
						fmt.Sprintf("p50 %+.2f ms, p99 %+.2f ms", r.AddedP50Ms, r.AddedP99Ms), "no comparison"})
				case !krOK:
					v = append(v, notRun(what, target, "KubeRay: "+orNotRun(o.KubeRay.Error)))
				default:
					r, k := pick(rg), pick(kr)
					measured := fmt.Sprintf("raygate p50 %+.2f ms (p99 %+.2f), KubeRay p50 %+.2f ms (p99 %+.2f)", r.AddedP50Ms, r.AddedP99Ms, k.AddedP50Ms, k.AddedP99Ms)
					ratio, why, ok := admissionRatio(r, k)
					if !ok {
						v = append(v, verdict{what, target, measured + ": " + why, "**not shown**"})
						continue
					}
					v = append(v, verdict{what, target, fmt.Sprintf("%.2f× (%s)", ratio, measured), status(ratio <= targetAdmissionRatio)})
				}
			}
		}
	}
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orNotRun(err string) string {
	if err == "" {
		return "case not measured"
	}
	return err
}

// renderOperatorsAdmission is the per-case table of both operators.
func renderOperatorsAdmission(m *md, o *operatorsAdmission) {
	if o == nil {
		return
	}
	m.p("Raygate against KubeRay v1.5.1 (`ENABLE_WEBHOOKS=true`, its validating webhook served with envtest's\n" +
		"certificate on 127.0.0.1:9443), each on a cluster of its own minutes apart, KubeRay with raygate's\n" +
		"reconcile concurrency and client limits. Creates are server-side dry-run creates of new objects;\n" +
		"updates are server-side dry-run merge patches of a stored object's head template (a new\n" +
		"environment value each time). KubeRay v1.5.1 registers a webhook for RayCluster only, so\n" +
		"RayService has no KubeRay figure.")
	var rows [][]string
	for _, op := range []operatorAdmission{o.Raygate, o.KubeRay} {
		if op.Error != "" {
			m.p("%s (%s): **not measured** — %s", op.Operator, op.Webhooks, firstLine(op.Error))
		}
		for _, c := range op.Cases {
			for _, l := range []admissionLatency{c.Sequential, c.Concurrent} {
				rows = append(rows, []string{op.Operator, c.Kind + " " + c.Operation, fmt.Sprint(l.Concurrency), fmt.Sprint(l.Requests),
					f2(l.Off.P50Ms), f2(l.On.P50Ms), f2(l.Off.P99Ms), f2(l.On.P99Ms),
					"**" + f2(l.AddedP50Ms) + "**", f2(l.AddedP99Ms), fmt.Sprint(l.On.Errors + l.Off.Errors)})
			}
		}
	}
	if len(rows) > 0 {
		m.table([]string{"operator", "request", "clients", "requests per setting", "off p50 ms", "on p50 ms", "off p99 ms", "on p99 ms", "added p50 ms", "added p99 ms", "errors"}, rows)
	}
	var lines []string
	for _, op := range []operatorAdmission{o.Raygate, o.KubeRay} {
		lines = append(lines, fmt.Sprintf("%s: %s", op.Operator, op.Webhooks))
	}
	m.p("Webhooks: %s.", strings.Join(lines, "; "))
}
