package rayjob

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

func TestCluster(t *testing.T) {
	job := stored(trainingJob())
	job.Labels = map[string]string{"team": "ml", rayv1.OriginatedFromCRNameLabelKey: "spoofed"}
	job.Annotations = map[string]string{"note": "x"}
	job.Spec.SubmissionMode = rayv1.K8sJobMode

	rc, err := Cluster(job, "train-k4x2p", features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"team": "ml", rayv1.OriginatedFromCRNameLabelKey: "train", rayv1.OriginatedFromCRDLabelKey: "RayJob",
		rayv1.JobSubmissionModeLabelKey: "K8sJobMode"}
	if diff := cmp.Diff(wantLabels, rc.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"note": "x"}, rc.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if rc.Name != "train-k4x2p" || rc.Namespace != "ml" || len(rc.OwnerReferences) != 1 || rc.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("metadata: %+v", rc.ObjectMeta)
	}
	if diff := cmp.Diff(*job.Spec.RayClusterSpec, rc.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}

	job.Spec.SubmissionMode = rayv1.SidecarMode
	rc, err = Cluster(job, "train-k4x2p", features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	head := rc.Spec.HeadGroupSpec.Template.Spec
	if len(head.Containers) != 2 || head.Containers[1].Name != rayv1.SubmitterContainerName || head.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("head: %d containers, restartPolicy %q", len(head.Containers), head.RestartPolicy)
	}
	if rc.Annotations[rayv1.DisableProvisionedHeadRestartKey] != "true" || rc.Labels[rayv1.JobSubmissionModeLabelKey] != "SidecarMode" {
		t.Errorf("sidecar cluster metadata: %+v %+v", rc.Annotations, rc.Labels)
	}
	if n := len(job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers); n != 1 || job.Annotations[rayv1.DisableProvisionedHeadRestartKey] != "" {
		t.Error("the job was modified")
	}

	job.Spec.RayClusterSpec = nil
	if _, err := Cluster(job, "x", features.Static{}); err == nil {
		t.Error("no error without rayClusterSpec")
	}
}

func TestNames(t *testing.T) {
	suffix := regexp.MustCompile(`^train-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	if n := NewClusterName("train"); !suffix.MatchString(n) {
		t.Errorf("cluster name %q", n)
	}
	if n := NewJobID("train"); !suffix.MatchString(n) {
		t.Errorf("job id %q", n)
	}
	longest := 0
	for _, n := range DerivedNames(strings.Repeat("j", 47)) {
		longest = max(longest, len(n))
	}
	if longest != 63 {
		t.Errorf("a 47-character job's longest derived name is %d characters, want 63 (KubeRay's 47-character limit)", longest)
	}

	job := &rayv1.RayJob{}
	job.Name = "train"
	for _, tc := range []struct {
		name             string
		edit             func(*rayv1.RayJob)
		id, cluster      string
		generatedID      bool
		generatedCluster bool
	}{
		{name: "nothing recorded", generatedID: true, generatedCluster: true},
		{name: "spec.jobId", edit: func(j *rayv1.RayJob) { j.Spec.JobId = "mine" }, id: "mine", generatedCluster: true},
		{name: "recorded", edit: func(j *rayv1.RayJob) {
			j.Spec.JobId, j.Status.JobId, j.Status.RayClusterName = "mine", "first", "train-aaaaa"
		}, id: "first", cluster: "train-aaaaa"},
		{name: "interactive, not named yet", edit: func(j *rayv1.RayJob) { j.Spec.SubmissionMode = rayv1.InteractiveMode }, generatedCluster: true},
		{name: "on an existing cluster", edit: func(j *rayv1.RayJob) {
			j.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "shared"}
		}, generatedID: true, cluster: "shared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job.DeepCopy()
			if tc.edit != nil {
				tc.edit(j)
			}
			if id := SubmissionID(j); (tc.generatedID && !suffix.MatchString(id)) || (!tc.generatedID && id != tc.id) {
				t.Errorf("submission id %q", id)
			}
			if c := ClusterName(j); (tc.generatedCluster && !suffix.MatchString(c)) || (!tc.generatedCluster && c != tc.cluster) {
				t.Errorf("cluster %q", c)
			}
		})
	}
}
