package raysim

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/raygate/raygate/internal/dashboard"
)

// kubeRayK8sJobModeArgs is the args[0] KubeRay v1.7 gives a K8sJobMode submitter container
// (command: /bin/bash -ce --) for a RayJob with a runtime env, metadata, entrypoint
// resources and an entrypoint with both kinds of quotes: its words joined with spaces, the
// JSON values and the echo text quoted by strconv.Quote.
const kubeRayK8sJobModeArgs = `until python -c "import urllib.request; r=urllib.request.urlopen('http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; ` +
	`do echo "Waiting for Ray Dashboard GCS to become healthy at http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265 ..." ; sleep 2 ; done ; ` +
	`if ! ray job status --address http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265 rayjob-sample-abc12 >/dev/null 2>&1 ; then ` +
	`ray job submit --address http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265 --no-wait ` +
	`--runtime-env-json "{\"pip\":[\"requests==2.26.0\"],\"env_vars\":{\"counter_name\":\"test_counter\"}}" ` +
	`--metadata-json "{\"owner\":\"team-a\"}" --submission-id rayjob-sample-abc12 ` +
	`--entrypoint-num-cpus 1.000000 --entrypoint-num-gpus 0.500000 --entrypoint-resources "{\"Custom_1\": 1, \"Custom_2\": 5.5}" ` +
	`-- echo no quote 'single quote' "double quote" ; fi ; ` +
	`ray job logs --address http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265 --follow rayjob-sample-abc12`

const sampleAddress = "http://rayjob-sample-raycluster-x7k2p-head-svc.team-a.svc.cluster.local:8265"

func TestParseSubmitterKubeRayK8sJobMode(t *testing.T) {
	sc, err := ParseSubmitter([]string{"/bin/bash", "-ce", "--"}, []string{kubeRayK8sJobModeArgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &SubmitterScript{
		GCSHealthURL: sampleAddress + "/api/gcs_healthz",
		CheckID:      "rayjob-sample-abc12",
		Address:      sampleAddress,
		Job: dashboard.JobSubmission{
			// `ray job submit` joins the entrypoint words back with shlex.join.
			Entrypoint:        "echo no quote 'single quote' 'double quote'",
			SubmissionID:      "rayjob-sample-abc12",
			RuntimeEnv:        []byte(`{"env_vars":{"counter_name":"test_counter"},"pip":["requests==2.26.0"]}`),
			Metadata:          map[string]string{"owner": "team-a"},
			EntrypointNumCPUs: 1, EntrypointNumGPUs: 0.5,
			EntrypointResources: map[string]float64{"Custom_1": 1, "Custom_2": 5.5},
		},
		NoWait:   true,
		FollowID: "rayjob-sample-abc12",
	}
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("got  %+v\nwant %+v", *sc, *want)
	}
}

func TestParseSubmitterVariants(t *testing.T) {
	env := map[string]string{"RAY_DASHBOARD_ADDRESS": "rj-head-svc.ns.svc.cluster.local:8265", "RAY_JOB_SUBMISSION_ID": "rj-xyz"}
	cases := []struct {
		name    string
		command []string
		args    []string
		env     map[string]string
		want    SubmitterScript
		wantErr string
	}{
		{name: "SidecarMode-style script: submit and wait, no check",
			command: []string{"/bin/bash", "-ce", "--"},
			args:    []string{`until python -c "x=urlopen('http://localhost:8265/api/gcs_healthz', timeout=10)" >/dev/null 2>&1 ; do echo "w" ; sleep 2 ; done ; ray job submit --address http://127.0.0.1:8265 --submission-id s-1 -- python /home/ray/samples/sample_code.py ;`},
			want: SubmitterScript{GCSHealthURL: "http://localhost:8265/api/gcs_healthz", Address: "http://127.0.0.1:8265",
				Job: dashboard.JobSubmission{Entrypoint: "python /home/ray/samples/sample_code.py", SubmissionID: "s-1"}}},
		{name: "a user's command with the kubelet's $(VAR) expansion",
			command: []string{"ray", "job", "submit", "--address=http://$(RAY_DASHBOARD_ADDRESS)", "--submission-id=$(RAY_JOB_SUBMISSION_ID)", "--no-wait", "--", "python", "-c", "print('hi there')"},
			env:     env,
			want: SubmitterScript{Address: "http://rj-head-svc.ns.svc.cluster.local:8265", NoWait: true,
				Job: dashboard.JobSubmission{Entrypoint: `python -c 'print('"'"'hi there'"'"')'`, SubmissionID: "rj-xyz"}}},
		{name: "a user's shell script with $VAR and ${VAR}, options among the words",
			command: []string{"sh", "-c"},
			args:    []string{"echo start && ray job submit --address=\"http://${RAY_DASHBOARD_ADDRESS}\" --working-dir s3://bucket/wd.zip --submission-id $RAY_JOB_SUBMISSION_ID python train.py --no-wait\n# done\n"},
			env:     env,
			want: SubmitterScript{Address: "http://rj-head-svc.ns.svc.cluster.local:8265", NoWait: true,
				Job: dashboard.JobSubmission{Entrypoint: "python train.py", SubmissionID: "rj-xyz", RuntimeEnv: []byte(`{"working_dir":"s3://bucket/wd.zip"}`)}}},
		{name: "the address from RAY_ADDRESS, no submission id, follow with -f",
			command: []string{"bash", "-o", "pipefail", "-c", "ray job submit --no-wait -- python a.py; ray job logs -f some-id"},
			env:     map[string]string{"RAY_ADDRESS": "10.0.0.5:8265"},
			want:    SubmitterScript{Address: "http://10.0.0.5:8265", NoWait: true, FollowID: "some-id", Job: dashboard.JobSubmission{Entrypoint: "python a.py"}}},
		{name: "no command", wantErr: "no command"},
		{name: "a script without ray job submit", command: []string{"python", "my_submit.py"}, wantErr: ErrNotASubmission.Error()},
		{name: "an unknown option", command: []string{"ray", "job", "submit", "--address", "http://a:1", "--frobnicate", "--", "x"}, wantErr: "no such option: --frobnicate"},
		{name: "no address", command: []string{"ray", "job", "submit", "--", "x"}, wantErr: "no --address"},
		{name: "no entrypoint", command: []string{"ray", "job", "submit", "--address", "http://a:1"}, wantErr: "missing the entrypoint"},
		{name: "a runtime env file", command: []string{"ray", "job", "submit", "--address", "http://a:1", "--runtime-env", "env.yaml", "--", "x"}, wantErr: "local file"},
		{name: "bad runtime env JSON", command: []string{"ray", "job", "submit", "--address", "http://a:1", "--runtime-env-json", "[1]", "--", "x"}, wantErr: "not a JSON object"},
		{name: "bad cpus", command: []string{"ray", "job", "submit", "--address", "http://a:1", "--entrypoint-num-cpus", "one", "--", "x"}, wantErr: "not a number"},
		{name: "two submissions", command: []string{"bash", "-c", "ray job submit --address http://a:1 -- x; ray job submit --address http://a:1 -- y"}, wantErr: "more than once"},
		{name: "unterminated quote", command: []string{"bash", "-c", `ray job submit --address "http://a:1 -- x`}, wantErr: "unterminated double quote"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseSubmitter(tc.command, tc.args, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*sc, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *sc, tc.want)
			}
		})
	}
}

func TestParseShell(t *testing.T) {
	env := map[string]string{"A": "alpha", "EMPTY": ""}
	cases := []struct {
		in   string
		want [][]string // keywords then "|" then words, per command
	}{
		{`echo a b`, [][]string{{"|", "echo", "a", "b"}}},
		{`echo 'x  y' "p q" r\ s`, [][]string{{"|", "echo", "x  y", "p q", "r s"}}},
		{`echo "$A" $A ${A} "${A}x" '$A' \$A $ ${EMPTY:-def} ${A:-def}`, [][]string{{"|", "echo", "alpha", "alpha", "alpha", "alphax", "$A", "$A", "$", "def", "alpha"}}},
		{`echo "say \"hi\" \\ \$A \n"`, [][]string{{"|", "echo", `say "hi" \ $A \n`}}},
		{`a >/dev/null 2>&1; b > out.txt c; d 2> err <in e`, [][]string{{"|", "a"}, {"|", "b", "c"}, {"|", "d", "e"}}},
		{"a && b || c | d & e\nf", [][]string{{"|", "a"}, {"|", "b"}, {"|", "c"}, {"|", "d"}, {"|", "e"}, {"|", "f"}}},
		{`if ! ray job status x ; then ray job submit -- y ; fi`, [][]string{{"if", "!", "|", "ray", "job", "status", "x"}, {"then", "|", "ray", "job", "submit", "--", "y"}, {"fi", "|"}}},
		{"a # a comment ; b\nc#not-a-comment", [][]string{{"|", "a"}, {"|", "c#not-a-comment"}}},
		{"a \\\n b", [][]string{{"|", "a", "b"}}},
		{`""`, [][]string{{"|", ""}}},
	}
	for _, tc := range cases {
		cmds, err := parseShell(tc.in, env)
		if err != nil {
			t.Errorf("parseShell(%q): %v", tc.in, err)
			continue
		}
		var got [][]string
		for _, c := range cmds {
			row := append(append([]string{}, c.keywords...), "|")
			got = append(got, append(row, c.words...))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseShell(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{`echo 'x`, `echo "x`} {
		if _, err := parseShell(bad, nil); err == nil {
			t.Errorf("parseShell(%q) = nil error", bad)
		}
	}
}

func TestExpandKubeletRefsAndShlexJoin(t *testing.T) {
	env := map[string]string{"ADDR": "h:8265", "ID": "j"}
	for in, want := range map[string]string{
		"--address=http://$(ADDR)": "--address=http://h:8265",
		"$(ID)-$(MISSING)":         "j-$(MISSING)",
		"$$(ADDR) costs $$5":       "$(ADDR) costs $5",
		"$ADDR ${ADDR} $(ADDR":     "$ADDR ${ADDR} $(ADDR",
		"trailing $":               "trailing $",
	} {
		if got := ExpandKubeletRefs(in, env); got != want {
			t.Errorf("ExpandKubeletRefs(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"python", "/a/b.py", "--lr=0.1", "x@y%z+,:"}, "python /a/b.py --lr=0.1 x@y%z+,:"},
		{[]string{"echo", "two words", "", "it's", "$HOME", "é"}, `echo 'two words' '' 'it'"'"'s' '$HOME' 'é'`},
	} {
		if got := shlexJoin(tc.in); got != tc.want {
			t.Errorf("shlexJoin(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsSubmitterPod(t *testing.T) {
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "rj", Controller: new(true)}}
	rs := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x"}}
	fromRayJob := map[string]string{"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "rj"}
	submitter := []corev1.Container{{Name: SubmitterContainerName}}
	other := []corev1.Container{{Name: "main"}}
	cases := []struct {
		name   string
		labels map[string]string
		owners []metav1.OwnerReference
		conts  []corev1.Container
		want   bool
	}{
		{"KubeRay's submitter", fromRayJob, job, submitter, true},
		{"a custom template keeps the labels", fromRayJob, job, other, true},
		{"an unlabelled Job pod with the submitter container", nil, job, submitter, true},
		{"an ordinary Job pod", nil, job, other, false},
		{"not owned by a Job", fromRayJob, rs, submitter, false},
		{"no owner", fromRayJob, nil, submitter, false},
		{"a SidecarMode head", map[string]string{"ray.io/node-type": "head", "ray.io/cluster": "c", "ray.io/originated-from-crd": "RayJob"}, job, submitter, false},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, OwnerReferences: tc.owners}, Spec: corev1.PodSpec{Containers: tc.conts}}
		if got := IsSubmitterPod(pod); got != tc.want {
			t.Errorf("%s: IsSubmitterPod = %v, want %v", tc.name, got, tc.want)
		}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar"}, {Name: SubmitterContainerName}}}}
	if c := SubmitterContainer(pod); c == nil || c.Name != SubmitterContainerName {
		t.Errorf("SubmitterContainer = %v", c)
	}
	if c := SubmitterContainer(&corev1.Pod{}); c != nil {
		t.Errorf("SubmitterContainer of no containers = %v", c)
	}
}

func TestParseSubmitterNeverPanics(t *testing.T) {
	inputs := []string{"", ";", ";;;", "\\", "$", "${", "${}", "$(", "'", "\"\\", "> ", "2>&", "ray job submit --", "ray job submit --address", "if ! ray job status", "ray job logs -f",
		"until python -c", "ray job submit --address=x -- \x00\xff", strings.Repeat("a;", 1000)}
	for _, in := range inputs {
		_, _ = ParseSubmitter([]string{"bash", "-c", in}, nil, nil)
		_, _ = ParseSubmitter([]string{in}, []string{in}, nil)
	}
}

func TestK8sJobModeCommandParses(t *testing.T) {
	cmd, args := K8sJobModeCommand(sampleAddress, "rj-1", " python /home/ray/samples/sample_code.py ")
	sc, err := ParseSubmitter(cmd, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := SubmitterScript{GCSHealthURL: sampleAddress + "/api/gcs_healthz", CheckID: "rj-1", Address: sampleAddress, NoWait: true, FollowID: "rj-1",
		Job: dashboard.JobSubmission{Entrypoint: "python /home/ray/samples/sample_code.py", SubmissionID: "rj-1"}}
	if !reflect.DeepEqual(*sc, want) {
		t.Errorf("got  %+v\nwant %+v", *sc, want)
	}
}
