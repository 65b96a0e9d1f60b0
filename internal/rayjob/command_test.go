package rayjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

const dashboard = "train-k4x2p-head-svc.ml.svc.cluster.local:8265"

// trainingJob is a job with every submitted setting, as the controller sees it once it
// recorded the submission id and the dashboard's address.
func trainingJob() *rayv1.RayJob {
	return &rayv1.RayJob{
		Spec: rayv1.RayJobSpec{
			Entrypoint:          `  python train.py --name "run 1"  `,
			RuntimeEnvYAML:      "pip:\n  - torch==2.5.0\nenv_vars:\n  STAGE: $HOME\n",
			Metadata:            map[string]string{"team": "ml", "run": "1"},
			EntrypointNumCpus:   2,
			EntrypointNumGpus:   0.25,
			EntrypointResources: `{"accel": 1}`,
			RayClusterSpec: &rayv1.RayClusterSpec{RayVersion: "2.52.0", HeadGroupSpec: rayv1.HeadGroupSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0",
					Ports: []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 9265}}}}},
			}}},
		},
		Status: rayv1.RayJobStatus{JobId: "train-qz7wd", DashboardURL: dashboard},
	}
}

func wait(health, address string) string {
	return `until python -c "import urllib.request; r=urllib.request.urlopen('` + health +
		`', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at ` +
		address + ` ..." ; sleep 2 ; done ; `
}

const submitted = `--runtime-env-json "{\"env_vars\":{\"STAGE\":\"$HOME\"},\"pip\":[\"torch==2.5.0\"]}" ` +
	`--metadata-json "{\"run\":\"1\",\"team\":\"ml\"}" --submission-id train-qz7wd --entrypoint-num-cpus 2.000000 ` +
	`--entrypoint-num-gpus 0.250000 --entrypoint-resources "{\"accel\": 1}" -- python train.py --name "run 1" ;`

func TestSubmitCommand(t *testing.T) {
	cases := map[string]struct {
		mode  rayv1.JobSubmissionMode
		gates features.Gates
		edit  func(*rayv1.RayJob)
		want  string
	}{
		"K8sJobMode checks the id, submits without waiting, then follows the logs": {
			mode: rayv1.K8sJobMode,
			want: wait("http://"+dashboard+"/api/gcs_healthz", "http://"+dashboard) +
				"if ! ray job status --address http://" + dashboard + " train-qz7wd >/dev/null 2>&1 ; then ray job submit --address http://" + dashboard +
				" --no-wait " + submitted + " fi ; ray job logs --address http://" + dashboard + " --follow train-qz7wd",
		},
		"an address with its scheme is kept": {
			mode: rayv1.K8sJobMode,
			edit: func(j *rayv1.RayJob) {
				j.Spec = rayv1.RayJobSpec{Entrypoint: "python a.py"}
				j.Status.DashboardURL = "http://10.0.0.1:8265"
			},
			want: wait("http://10.0.0.1:8265/api/gcs_healthz", "http://10.0.0.1:8265") +
				"if ! ray job status --address http://10.0.0.1:8265 train-qz7wd >/dev/null 2>&1 ; then ray job submit --address http://10.0.0.1:8265" +
				" --no-wait --submission-id train-qz7wd -- python a.py ; fi ; ray job logs --address http://10.0.0.1:8265 --follow train-qz7wd",
		},
		"SidecarMode submits once, over the head's own dashboard port": {
			mode: rayv1.SidecarMode,
			want: wait("http://localhost:9265/api/gcs_healthz", "http://127.0.0.1:9265") + "ray job submit --address http://127.0.0.1:9265 " + submitted,
		},
		"SidecarMode with restarts checks the id first": {
			mode: rayv1.SidecarMode, gates: features.Static{features.SidecarSubmitterRestart: true},
			want: wait("http://localhost:9265/api/gcs_healthz", "http://127.0.0.1:9265") +
				"if ! ray job status --address http://127.0.0.1:9265 train-qz7wd >/dev/null 2>&1 ; then ray job submit --address http://127.0.0.1:9265" +
				" --no-wait " + submitted + " fi ; ray job logs --address http://127.0.0.1:9265 --follow train-qz7wd",
		},
		"SidecarMode without a dashboard port uses Ray's": {
			mode: rayv1.SidecarMode,
			edit: func(j *rayv1.RayJob) {
				j.Spec = rayv1.RayJobSpec{Entrypoint: "python a.py", RayClusterSpec: &rayv1.RayClusterSpec{}}
			},
			want: wait("http://localhost:8265/api/gcs_healthz", "http://127.0.0.1:8265") +
				"ray job submit --address http://127.0.0.1:8265 --submission-id train-qz7wd -- python a.py ;",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainingJob()
			if tc.edit != nil {
				tc.edit(job)
			}
			gates := tc.gates
			if gates == nil {
				gates = features.Static{}
			}
			cmd, err := SubmitCommand(job, tc.mode, gates)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strings.Join(cmd, " ")); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubmitCommandRefuses(t *testing.T) {
	cases := map[string]struct {
		mode rayv1.JobSubmissionMode
		edit func(*rayv1.RayJob)
		want string
	}{
		"HTTPMode has no command":       {mode: rayv1.HTTPMode, want: `submission mode "HTTPMode" has no submit command`},
		"a runtime env that is no YAML": {mode: rayv1.K8sJobMode, edit: func(j *rayv1.RayJob) { j.Spec.RuntimeEnvYAML = "a: [" }, want: "runtimeEnvYAML is not valid YAML"},
		"metadata on an old Ray": {
			mode: rayv1.K8sJobMode, edit: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.RayVersion = "2.5.1" },
			want: "metadata needs Ray 2.6.0 or newer",
		},
		"metadata with a rayVersion that is not one": {
			mode: rayv1.SidecarMode, edit: func(j *rayv1.RayJob) { j.Spec.RayClusterSpec.RayVersion = "nightly" },
			want: `rayVersion "nightly" is not a version`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := trainingJob()
			if tc.edit != nil {
				tc.edit(job)
			}
			_, err := SubmitCommand(job, tc.mode, features.Static{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Without a cluster spec (clusterSelector) the cluster is taken to be new enough.
	job := trainingJob()
	job.Spec.RayClusterSpec = nil
	if _, err := SubmitCommand(job, rayv1.K8sJobMode, features.Static{}); err != nil {
		t.Fatal(err)
	}
}

func TestRuntimeEnvJSON(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"null":                  "null",
		"working_dir: s3://x\n": `{"working_dir":"s3://x"}`,
		"pip: [a, b]\n":         `{"pip":["a","b"]}`,
	} {
		got, err := RuntimeEnvJSON(in)
		if err != nil || got != want {
			t.Errorf("RuntimeEnvJSON(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
