package rayjob

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

// The submitter waits for the dashboard's GCS health endpoint before it submits; the check is
// KubeRay's, a Python one-liner, since the Ray image has Python but not always curl or wget.
const (
	gcsHealthPath           = "api/gcs_healthz"
	gcsHealthTimeoutSeconds = 10
	healthRetrySeconds      = 2
)

// MinRayVersionForMetadata is the first Ray whose `ray job submit` has --metadata-json.
const MinRayVersionForMetadata = "2.6.0"

var minMetadataVersion = utilversion.MustParseGeneric(MinRayVersionForMetadata)

// SubmitShell is the shell the submitter runs the command with: bash, stopping at the first
// failing command (-e).
var SubmitShell = []string{"/bin/bash", "-ce", "--"}

// SubmitCommand is the submitter's shell command, as words to be joined by spaces (the
// entrypoint is shell text itself): wait for the dashboard, then `ray job submit` the job's
// entrypoint with its runtime environment, metadata, submission id and entrypoint resources.
//
// In K8sJobMode the submitter Job may run more than once, and with SidecarSubmitterRestart
// the sidecar may restart, so the command first asks `ray job status` whether the id was
// submitted already, submits with --no-wait only if not, and then follows the logs: a
// retry never submits the job twice. The submission id is status.jobId (the controller
// records it before anything is submitted). K8sJobMode reaches the dashboard at
// status.dashboardURL ("http://" is added when missing); in SidecarMode the submitter shares
// the head's network and uses 127.0.0.1 and the head's dashboard port.
//
// It fails for another mode, for a runtimeEnvYAML that is not YAML, and for metadata with a
// cluster whose rayVersion is older than MinRayVersionForMetadata or not a version.
func SubmitCommand(job *rayv1.RayJob, mode rayv1.JobSubmissionMode, gates features.Gates) ([]string, error) {
	var address, health string
	switch mode {
	case rayv1.SidecarMode:
		port := DashboardPort(job.Spec.RayClusterSpec)
		address = "http://127.0.0.1:" + strconv.Itoa(int(port))
		health = fmt.Sprintf("http://localhost:%d/%s", port, gcsHealthPath)
	case rayv1.K8sJobMode:
		address = job.Status.DashboardURL
		if !strings.HasPrefix(address, "http://") {
			address = "http://" + address
		}
		health = address + "/" + gcsHealthPath
	default:
		return nil, fmt.Errorf("submission mode %q has no submit command", mode)
	}
	id := job.Status.JobId
	checkFirst := mode == rayv1.K8sJobMode || gates.Enabled(features.SidecarSubmitterRestart)

	cmd := []string{
		"until", healthCheck(health), ">/dev/null", "2>&1", ";",
		"do", "echo", strconv.Quote("Waiting for Ray Dashboard GCS to become healthy at " + address + " ..."), ";",
		"sleep", strconv.Itoa(healthRetrySeconds), ";", "done", ";",
	}
	if checkFirst {
		cmd = append(cmd, "if", "!", "ray", "job", "status", "--address", address, id, ">/dev/null", "2>&1", ";", "then")
	}
	cmd = append(cmd, "ray", "job", "submit", "--address", address)
	if checkFirst {
		cmd = append(cmd, "--no-wait")
	}
	args, err := submitArgs(job, id)
	if err != nil {
		return nil, err
	}
	cmd = append(cmd, args...)
	// "--" ends ray's options: the rest is the entrypoint, run by Ray as written.
	cmd = append(cmd, "--", strings.TrimSpace(job.Spec.Entrypoint), ";")
	if checkFirst {
		cmd = append(cmd, "fi", ";", "ray", "job", "logs", "--address", address, "--follow", id)
	}
	return cmd, nil
}

// healthCheck exits 0 once the dashboard at url reports its GCS healthy.
func healthCheck(url string) string {
	return fmt.Sprintf(`python -c "import urllib.request; r=urllib.request.urlopen('%s', timeout=%d); exit(0 if b'success' in r.read() else 1)"`,
		url, gcsHealthTimeoutSeconds)
}

// submitArgs are the options of `ray job submit` that carry the job's settings. JSON values
// are Go-quoted, which the shell reads as a double-quoted word, as under KubeRay.
func submitArgs(job *rayv1.RayJob, id string) ([]string, error) {
	var args []string
	env, err := RuntimeEnvJSON(job.Spec.RuntimeEnvYAML)
	if err != nil {
		return nil, err
	}
	if env != "" {
		args = append(args, "--runtime-env-json", strconv.Quote(env))
	}
	if len(job.Spec.Metadata) > 0 {
		if err := metadataSupported(job.Spec.RayClusterSpec); err != nil {
			return nil, err
		}
		b, err := json.Marshal(job.Spec.Metadata)
		if err != nil {
			return nil, err
		}
		args = append(args, "--metadata-json", strconv.Quote(string(b)))
	}
	if id != "" {
		args = append(args, "--submission-id", id)
	}
	if n := job.Spec.EntrypointNumCpus; n > 0 {
		args = append(args, "--entrypoint-num-cpus", fmt.Sprintf("%f", n))
	}
	if n := job.Spec.EntrypointNumGpus; n > 0 {
		args = append(args, "--entrypoint-num-gpus", fmt.Sprintf("%f", n))
	}
	if r := job.Spec.EntrypointResources; r != "" {
		args = append(args, "--entrypoint-resources", strconv.Quote(r))
	}
	return args, nil
}

// RuntimeEnvJSON is runtimeEnvYAML as JSON ("" when empty): what the submitter and the Ray
// Jobs API take.
func RuntimeEnvJSON(runtimeEnvYAML string) (string, error) {
	if runtimeEnvYAML == "" {
		return "", nil
	}
	b, err := yaml.YAMLToJSON([]byte(runtimeEnvYAML))
	if err != nil {
		return "", fmt.Errorf("runtimeEnvYAML is not valid YAML: %w", err)
	}
	return string(b), nil
}

// metadataSupported: `ray job submit --metadata-json` exists from Ray 2.6.0. Without a
// cluster spec (clusterSelector) or a rayVersion, the cluster is taken to be new enough.
func metadataSupported(spec *rayv1.RayClusterSpec) error {
	if spec == nil || spec.RayVersion == "" {
		return nil
	}
	v, err := utilversion.ParseGeneric(spec.RayVersion)
	if err != nil {
		return fmt.Errorf("rayVersion %q is not a version: %w", spec.RayVersion, err)
	}
	if !v.AtLeast(minMetadataVersion) {
		return fmt.Errorf("metadata needs Ray %s or newer (`ray job submit --metadata-json`), and rayVersion is %s", MinRayVersionForMetadata, spec.RayVersion)
	}
	return nil
}

// DashboardPort is the port of the head's Ray container named "dashboard", else Ray's
// default, as KubeRay reads it for the sidecar.
func DashboardPort(spec *rayv1.RayClusterSpec) int32 {
	if spec == nil || len(spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
		return rayspec.DefaultDashboardPort
	}
	for _, p := range spec.HeadGroupSpec.Template.Spec.Containers[rayv1.RayContainerIndex].Ports {
		if p.Name == rayspec.DashboardPortName {
			return p.ContainerPort
		}
	}
	return rayspec.DefaultDashboardPort
}
