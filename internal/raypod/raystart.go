package raypod

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Accelerators Ray knows as custom resources, keyed by their Kubernetes resource name.
var acceleratorRayResources = map[corev1.ResourceName]string{
	"google.com/tpu":            "TPU",
	"aws.amazon.com/neuroncore": "neuron_cores",
}

// flags that take an explicit true/false value; any other "true"/"false" value is a switch.
var explicitBoolFlags = []string{"log-color", "include-dashboard", "include-log-monitor"}

// headPort is the GCS port workers and drivers connect to.
func headPort(spec *rayv1.RayClusterSpec) string {
	return strconv.Itoa(int(rayspec.PortParam(spec.HeadGroupSpec.RayStartParams, "port", rayspec.DefaultGCSPort)))
}

// startParams completes a group's rayStartParams into the flags `ray start` gets: the group's
// logical resources and labels, resources derived from the Ray container's limits, and the
// defaults Ray on Kubernetes needs. The spec's map is not modified.
func startParams(node rayv1.RayNodeType, given, groupResources, groupLabels map[string]string, ray corev1.Container, headAddress string, autoscaling bool) map[string]string {
	p := maps.Clone(given)
	if p == nil {
		p = map[string]string{}
	}
	applyGroupResources(p, groupResources)
	if len(groupLabels) > 0 {
		kv := make([]string, 0, len(groupLabels))
		for _, k := range slices.Sorted(maps.Keys(groupLabels)) {
			kv = append(kv, k+"="+groupLabels[k])
		}
		p["labels"] = strings.Join(kv, ",")
	}
	deriveFromContainer(p, ray.Resources)

	switch node {
	case rayv1.HeadNode:
		// Ray's default "localhost" would hide the dashboard from the Service.
		setDefault(p, "dashboard-host", "0.0.0.0")
		if autoscaling {
			// The autoscaler sidecar replaces Ray's own monitor process.
			p["no-monitor"] = "true"
		}
	case rayv1.WorkerNode:
		setDefault(p, "address", headAddress)
	}
	setDefault(p, "metrics-export-port", strconv.Itoa(rayspec.DefaultMetricsPort))
	// The probes query the dashboard agent on this port; pin it so they and Ray agree.
	setDefault(p, "dashboard-agent-listen-port", strconv.Itoa(rayspec.DefaultDashboardAgentPort))
	// Without --block `ray start` returns and the container exits.
	p["block"] = "true"
	return p
}

func setDefault(p map[string]string, k, v string) {
	if _, ok := p[k]; !ok {
		p[k] = v
	}
}

// applyGroupResources turns the group's `resources` field into flags: CPU, memory and GPUs
// into their own flags, everything else into the --resources JSON. It wins over the same
// resources in rayStartParams (admission rejects giving both).
func applyGroupResources(p map[string]string, res map[string]string) {
	custom := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(res)) {
		q, err := resource.ParseQuantity(res[name])
		if err != nil {
			continue // admission rejects unparsable quantities
		}
		switch lower := strings.ToLower(name); {
		case lower == "cpu":
			p["num-cpus"] = strconv.FormatInt(q.Value(), 10)
		case lower == "memory":
			p["memory"] = strconv.FormatInt(q.Value(), 10)
		case rayspec.IsGPUResource(lower):
			p["num-gpus"] = strconv.FormatInt(q.Value(), 10)
		default:
			custom[name] = q.AsApproximateFloat64()
		}
	}
	if len(custom) > 0 {
		p["resources"] = quoteResources(custom)
	}
}

// deriveFromContainer fills num-cpus, memory, num-gpus and accelerator resources from the Ray
// container's resources when rayStartParams does not give them, so Ray schedules exactly
// what Kubernetes granted instead of what it detects on the node.
func deriveFromContainer(p map[string]string, r corev1.ResourceRequirements) {
	if _, ok := p["num-cpus"]; !ok {
		cpu := r.Limits[corev1.ResourceCPU]
		if cpu.IsZero() {
			cpu = r.Requests[corev1.ResourceCPU]
		}
		if !cpu.IsZero() {
			p["num-cpus"] = strconv.FormatInt(cpu.Value(), 10)
		}
	}
	if _, ok := p["memory"]; !ok {
		if mem := r.Limits[corev1.ResourceMemory]; !mem.IsZero() {
			p["memory"] = strconv.FormatInt(mem.Value(), 10)
		}
	}
	names := slices.Sorted(maps.Keys(r.Limits))
	if _, ok := p["num-gpus"]; !ok {
		for _, n := range names {
			if q := r.Limits[n]; rayspec.IsGPUResource(string(n)) && !q.IsZero() {
				p["num-gpus"] = strconv.FormatInt(q.Value(), 10)
				break
			}
		}
	}
	custom, err := parseResources(p["resources"])
	if err != nil {
		return // leave a hand-written value alone; Ray reports it
	}
	for _, n := range names {
		rayName, ok := acceleratorRayResources[n]
		if q := r.Limits[n]; !ok || q.IsZero() {
			continue
		}
		if _, given := custom[rayName]; !given {
			q := r.Limits[n]
			custom[rayName] = q.AsApproximateFloat64()
			p["resources"] = quoteResources(custom)
		}
		break // only the first accelerator, as Ray has one accelerator type per node
	}
}

func parseResources(s string) (map[string]float64, error) {
	m := map[string]float64{}
	s = strings.Trim(s, "'\"` ")
	if s == "" {
		return m, nil
	}
	return m, json.Unmarshal([]byte(s), &m)
}

// quoteResources is the --resources value: JSON in single quotes for the shell.
func quoteResources(m map[string]float64) string {
	b, _ := json.Marshal(m) // map keys are sorted by encoding/json
	return "'" + string(b) + "'"
}

// rayStartCommand renders `ray start` with the flags in a stable order.
func rayStartCommand(node rayv1.RayNodeType, p map[string]string) string {
	var b strings.Builder
	b.WriteString("ray start")
	if node == rayv1.HeadNode {
		b.WriteString(" --head")
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		v := p[k]
		lower := strings.ToLower(v)
		if (lower == "true" || lower == "false") && !slices.Contains(explicitBoolFlags, k) {
			if lower == "true" {
				fmt.Fprintf(&b, " --%s", k)
			}
			continue
		}
		fmt.Fprintf(&b, " --%s=%s", k, v)
	}
	return b.String()
}

// containerCommand is what the Ray container runs: the user's own command (if any and if it
// does not start Ray itself), then a raised open-files limit and `ray start`, run by shell
// (bash with the options the operator's settings ask for).
func containerCommand(c corev1.Container, startCmd string, shell []string) (command, args []string, replace bool) {
	user := strings.TrimSpace(strings.Join(append(slices.Clone(c.Command), c.Args...), " "))
	if strings.Contains(user, "ray start") {
		return nil, nil, false
	}
	script := fmt.Sprintf("ulimit -n ${%s:-65536}; %s", EnvUlimitOpenFiles, startCmd)
	if user != "" {
		script = user + " && " + script
	}
	return slices.Clone(shell), []string{script}, true
}
