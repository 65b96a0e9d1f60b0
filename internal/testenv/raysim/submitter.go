package raysim

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// A RayJob in K8sJobMode runs its submission in a batch/v1 Job: the submitter pod waits
// for the head's GCS, asks `ray job status` whether the submission id is known, runs `ray
// job submit --no-wait` only if it is not, then follows the job with `ray job logs
// --follow` (KubeRay v1.7's BuildJobSubmitCommand). Without containers nothing runs that
// script, so the harness reads it (ParseSubmitter) and carries it out against the
// simulated Jobs API (RunSubmitter), then gives the pod the phase and exit code the script
// would have had.

const (
	// SubmitterContainerName is the name KubeRay gives the container running `ray job
	// submit`, in a submitter pod and, in SidecarMode, in the head pod.
	SubmitterContainerName = "ray-job-submitter"
	// RayJobKind is the ray.io/originated-from-crd value of the objects made for a RayJob.
	RayJobKind = "RayJob"
)

// IsSubmitterPod reports whether pod is a RayJob's K8sJobMode submitter: a pod of a
// batch/v1 Job that is labelled as made for a RayJob or has a container named
// ray-job-submitter. Ray pods never are, not even a SidecarMode head with a submitter
// container.
func IsSubmitterPod(pod *corev1.Pod) bool {
	if pod.Labels[rayv1.NodeTypeLabelKey] != "" || pod.Labels[rayv1.ClusterLabelKey] != "" {
		return false
	}
	ownedByJob := slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "Job" && strings.HasPrefix(o.APIVersion, "batch/")
	})
	if !ownedByJob {
		return false
	}
	if pod.Labels[rayv1.OriginatedFromCRDLabelKey] == RayJobKind {
		return true
	}
	return slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == SubmitterContainerName })
}

// SubmitterContainer is the container of a submitter pod that submits: the one named
// ray-job-submitter, else the first (KubeRay sets the command of the first).
func SubmitterContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == SubmitterContainerName {
			return &pod.Spec.Containers[i]
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	return &pod.Spec.Containers[0]
}

// SubmitterScript is what a submitter container runs, as far as the simulation needs it.
type SubmitterScript struct {
	// GCSHealthURL, when set, is polled until it answers "success" before anything else
	// runs (KubeRay's wait loop).
	GCSHealthURL string
	// CheckID, when set, is the submission id `ray job status` asks about first: the
	// submission runs only if that fails (the job is unknown), so a retried pod does not
	// submit twice.
	CheckID string
	// Address is the dashboard `ray job submit` talks to, http://host:port.
	Address string
	// Job is the submission as `ray job submit` POSTs it.
	Job dashboard.JobSubmission
	// NoWait: `ray job submit --no-wait` returns once submitted; without it the command
	// follows the job and exits 1 if the job FAILED.
	NoWait bool
	// FollowID, when set, is the job `ray job logs --follow` follows after the
	// submission: it waits for the job to end and exits 0 whatever the job's status.
	FollowID string
}

// ErrNotASubmission is returned (wrapped) when a container's command has no `ray job
// submit` the simulation can carry out.
var ErrNotASubmission = errors.New("no `ray job submit` the simulation can run")

// ParseSubmitter reads a submitter container's command and args: $(VAR) references are
// expanded from env as the kubelet does, then a shell's -c script (KubeRay's `/bin/bash
// -ce -- <script>`) is read with its $VAR references, or the command itself is taken as
// one `ray job submit` invocation. env holds the container's variables with literal values.
func ParseSubmitter(command, args []string, env map[string]string) (*SubmitterScript, error) {
	argv := make([]string, 0, len(command)+len(args))
	for _, a := range slices.Concat(command, args) {
		argv = append(argv, ExpandKubeletRefs(a, env))
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: the container has no command (the image's entrypoint is unknown here)", ErrNotASubmission)
	}
	cmds := []shellCommand{{words: argv}}
	if script, ok := shellScript(argv); ok {
		var err error
		if cmds, err = parseShell(script, env); err != nil {
			return nil, fmt.Errorf("reading the submitter's script: %w", err)
		}
	}
	return fromCommands(cmds, env)
}

// shellScript returns the -c script of a shell invocation (bash -ce -- 'script').
func shellScript(argv []string) (string, bool) {
	switch path.Base(argv[0]) {
	case "bash", "sh", "dash", "zsh", "ash":
	default:
		return "", false
	}
	hasC := false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if a == "-o" || a == "+o" {
			i++
			continue
		}
		if (!strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+")) || strings.HasPrefix(a, "--") {
			break
		}
		if strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'c') {
			hasC = true
		}
	}
	if !hasC || i >= len(argv) {
		return "", false
	}
	return argv[i], true
}

var healthURL = regexp.MustCompile(`urlopen\(\s*['"]([^'"]+)['"]`)

// fromCommands finds KubeRay's steps among the script's commands; others (echo, sleep,
// the user's own) are ignored.
func fromCommands(cmds []shellCommand, env map[string]string) (*SubmitterScript, error) {
	sc := &SubmitterScript{}
	submitted := false
	var checkID string
	for _, c := range cmds {
		w := c.words
		switch {
		case isRayJob(w, "submit"):
			if submitted {
				return nil, errors.New("the script runs `ray job submit` more than once")
			}
			if err := parseSubmit(sc, w[3:], env); err != nil {
				return nil, fmt.Errorf("ray job submit: %w", err)
			}
			submitted = true
			sc.CheckID = checkID
		case isRayJob(w, "status") && slices.Contains(c.keywords, "if") && slices.Contains(c.keywords, "!"):
			_, pos, err := parseFlags(w[3:], map[string]bool{"address": true, "headers": true, "verify": true, "log-style": true, "log-color": true}, nil)
			if err != nil {
				return nil, fmt.Errorf("ray job status: %w", err)
			}
			if len(pos) != 1 {
				return nil, errors.New("ray job status: want one submission id")
			}
			checkID = pos[0]
		case isRayJob(w, "logs") && submitted:
			flags, pos, err := parseFlags(w[3:], map[string]bool{"address": true, "headers": true, "verify": true, "log-style": true, "log-color": true}, map[string]bool{"follow": true, "f": true})
			if err != nil {
				return nil, fmt.Errorf("ray job logs: %w", err)
			}
			if len(pos) != 1 {
				return nil, errors.New("ray job logs: want one submission id")
			}
			if _, f1 := flags["follow"]; f1 {
				sc.FollowID = pos[0]
			} else if _, f2 := flags["f"]; f2 {
				sc.FollowID = pos[0]
			}
		case slices.Contains(c.keywords, "until") && len(w) >= 3 && strings.HasPrefix(path.Base(w[0]), "python") && w[1] == "-c":
			if m := healthURL.FindStringSubmatch(w[2]); m != nil {
				sc.GCSHealthURL = m[1]
			}
		}
	}
	if !submitted {
		return nil, ErrNotASubmission
	}
	return sc, nil
}

// isRayJob reports whether words run `ray job <verb>`.
func isRayJob(words []string, verb string) bool {
	return len(words) >= 3 && path.Base(words[0]) == "ray" && words[1] == "job" && words[2] == verb
}

// submitValueFlags are the options of `ray job submit` that take a value.
var submitValueFlags = map[string]bool{
	"address": true, "job-id": true, "submission-id": true, "runtime-env": true, "runtime-env-json": true,
	"working-dir": true, "metadata-json": true, "entrypoint-num-cpus": true, "entrypoint-num-gpus": true,
	"entrypoint-memory": true, "entrypoint-resources": true, "entrypoint-label-selector": true,
	"headers": true, "verify": true, "log-style": true, "log-color": true,
}

var submitBoolFlags = map[string]bool{"no-wait": true, "v": true, "verbose": true}

// parseSubmit reads `ray job submit`'s options and entrypoint into sc.
func parseSubmit(sc *SubmitterScript, args []string, env map[string]string) error {
	flags, entry, err := parseFlags(args, submitValueFlags, submitBoolFlags)
	if err != nil {
		return err
	}
	if len(entry) == 0 {
		return errors.New("missing the entrypoint")
	}
	sc.Job.Entrypoint = shlexJoin(entry)
	_, sc.NoWait = flags["no-wait"]
	sc.Address = flags["address"]
	for _, v := range []string{"RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"} {
		if sc.Address == "" {
			sc.Address = env[v]
		}
	}
	if sc.Address == "" {
		return errors.New("no --address, RAY_API_SERVER_ADDRESS or RAY_ADDRESS")
	}
	if !strings.Contains(sc.Address, "://") {
		sc.Address = "http://" + sc.Address
	}
	sc.Job.SubmissionID = flags["submission-id"]
	if sc.Job.SubmissionID == "" {
		sc.Job.SubmissionID = flags["job-id"]
	}
	if _, ok := flags["runtime-env"]; ok {
		return errors.New("--runtime-env reads a local file, which the simulation cannot")
	}
	var runtimeEnv map[string]any
	if v, ok := flags["runtime-env-json"]; ok {
		if err := json.Unmarshal([]byte(v), &runtimeEnv); err != nil || runtimeEnv == nil {
			return fmt.Errorf("--runtime-env-json is not a JSON object: %q", v)
		}
	}
	if v, ok := flags["working-dir"]; ok {
		if runtimeEnv == nil {
			runtimeEnv = map[string]any{}
		}
		runtimeEnv["working_dir"] = v
	}
	if runtimeEnv != nil {
		sc.Job.RuntimeEnv, _ = json.Marshal(runtimeEnv)
	}
	if v, ok := flags["metadata-json"]; ok {
		if err := json.Unmarshal([]byte(v), &sc.Job.Metadata); err != nil {
			return fmt.Errorf("--metadata-json is not a JSON object of strings: %q", v)
		}
	}
	if v, ok := flags["entrypoint-resources"]; ok {
		if err := json.Unmarshal([]byte(v), &sc.Job.EntrypointResources); err != nil {
			return fmt.Errorf("--entrypoint-resources is not a JSON object of numbers: %q", v)
		}
	}
	for name, dst := range map[string]*float64{"entrypoint-num-cpus": &sc.Job.EntrypointNumCPUs, "entrypoint-num-gpus": &sc.Job.EntrypointNumGPUs} {
		if v, ok := flags[name]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("--%s is not a number: %q", name, v)
			}
			*dst = f
		}
	}
	if v, ok := flags["entrypoint-memory"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("--entrypoint-memory is not an integer: %q", v)
		}
		sc.Job.EntrypointMemory = n
	}
	return nil
}

// parseFlags reads click-style options (--name value, --name=value, -x) anywhere among
// the arguments, as click does, up to "--", after which every word is positional. An
// option it does not know is an error, as click's usage error ends the command.
func parseFlags(args []string, valueFlags, boolFlags map[string]bool) (map[string]string, []string, error) {
	flags := map[string]string{}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case valueFlags[name]:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, nil, fmt.Errorf("option --%s needs a value", name)
				}
				i++
				value = args[i]
			}
			flags[name] = value
		case boolFlags[name] && !hasValue:
			flags[name] = ""
		default:
			return nil, nil, fmt.Errorf("no such option: %s", a)
		}
	}
	return flags, positional, nil
}
