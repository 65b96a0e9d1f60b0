package rayjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

func stored(job *rayv1.RayJob) *rayv1.RayJob {
	job.Name, job.Namespace, job.UID = "train", "ml", "uid-1"
	return job
}

// clusterOf is the RayCluster train runs on.
func clusterOf(job *rayv1.RayJob, edit func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "train-k4x2p", Namespace: "ml"}, Spec: *job.Spec.RayClusterSpec.DeepCopy()}
	if edit != nil {
		edit(rc)
	}
	return rc
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			v = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
		m[e.Name] = v
	}
	return m
}

func TestSubmitterTemplate(t *testing.T) {
	restricted := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	podRestricted := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	job := stored(trainingJob())
	job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = restricted
	job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.SecurityContext = podRestricted

	tmpl, err := SubmitterTemplate(job, clusterOf(job, nil), features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := SubmitCommand(job, rayv1.K8sJobMode, features.Static{})
	want := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			rayv1.OriginatedFromCRNameLabelKey: "train", rayv1.OriginatedFromCRDLabelKey: "RayJob", rayv1.KubernetesCreatedByLabelKey: "kuberay-operator",
		}},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: podRestricted,
			Containers: []corev1.Container{{
				Name:    "ray-job-submitter",
				Image:   "rayproject/ray:2.52.0",
				Command: []string{"/bin/bash", "-ce", "--"},
				Args:    []string{strings.Join(cmd, " ")},
				Env: []corev1.EnvVar{
					{Name: "PYTHONUNBUFFERED", Value: "1"},
					{Name: "RAY_DASHBOARD_ADDRESS", Value: dashboard},
					{Name: "RAY_JOB_SUBMISSION_ID", Value: "train-qz7wd"},
				},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
				},
				SecurityContext: restricted,
			}},
		},
	}
	if diff := cmp.Diff(want, tmpl); diff != "" {
		t.Errorf("default template (-want +got):\n%s", diff)
	}
	if job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext != restricted {
		t.Error("the job was modified")
	}
}

func TestSubmitterTemplateOfTheUser(t *testing.T) {
	own := func(command ...string) *rayv1.RayJob {
		job := stored(trainingJob())
		job.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "submit"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{
				{Name: "submit", Image: "quay.io/kuberay/submitter:v1.5.1", Command: command, Env: []corev1.EnvVar{{Name: "RAY_JOB_SUBMISSION_ID", Value: "mine"}}},
				{Name: "logs", Image: "busybox"},
			}},
		}
		return job
	}
	t.Run("a command of its own is kept; the environment is set", func(t *testing.T) {
		tmpl, err := SubmitterTemplate(own("/submitter"), nil, features.Static{})
		if err != nil {
			t.Fatal(err)
		}
		c := tmpl.Spec.Containers[0]
		if diff := cmp.Diff([]string{"/submitter"}, c.Command); diff != "" || c.Args != nil {
			t.Errorf("command changed: %v %v", c.Command, c.Args)
		}
		if diff := cmp.Diff(map[string]string{"PYTHONUNBUFFERED": "1", "RAY_DASHBOARD_ADDRESS": dashboard, "RAY_JOB_SUBMISSION_ID": "train-qz7wd"}, envOf(c)); diff != "" {
			t.Errorf("env (-want +got):\n%s", diff)
		}
		if tmpl.Labels["app"] != "submit" || tmpl.Labels[rayv1.OriginatedFromCRNameLabelKey] != "train" || tmpl.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
			t.Errorf("template metadata or policy lost: %+v %s", tmpl.Labels, tmpl.Spec.RestartPolicy)
		}
		if len(tmpl.Spec.Containers[1].Env) != 0 {
			t.Error("only the first container is the submitter")
		}
	})
	t.Run("without a command it runs the submit command", func(t *testing.T) {
		tmpl, err := SubmitterTemplate(own(), nil, features.Static{})
		if err != nil {
			t.Fatal(err)
		}
		c := tmpl.Spec.Containers[0]
		if diff := cmp.Diff(SubmitShell, c.Command); diff != "" || len(c.Args) != 1 || !strings.Contains(c.Args[0], "ray job submit") {
			t.Errorf("command: %v %v", c.Command, c.Args)
		}
	})
	t.Run("no container", func(t *testing.T) {
		job := own()
		job.Spec.SubmitterPodTemplate.Spec.Containers = nil
		if _, err := SubmitterTemplate(job, nil, features.Static{}); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestSubmitterTokenAuth(t *testing.T) {
	job := stored(trainingJob())
	token := clusterOf(job, func(rc *rayv1.RayCluster) { rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken} })
	tmpl, err := SubmitterTemplate(job, token, features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(tmpl.Spec.Containers[0])
	if env[rayspec.EnvRayAuthMode] != "token" || env[rayspec.EnvRayAuthToken] != "secret:train-k4x2p/"+rayspec.AuthTokenKey {
		t.Errorf("token env: %v", env)
	}

	delegated := clusterOf(job, func(rc *rayv1.RayCluster) {
		rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	})
	tmpl, err = SubmitterTemplate(job, delegated, features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	env = envOf(tmpl.Spec.Containers[0])
	if _, inline := env[rayspec.EnvRayAuthToken]; inline || env[rayspec.EnvRayEnableK8sTokenAuth] != "true" {
		t.Errorf("delegated env: %v", env)
	}
	if n := len(tmpl.Spec.Volumes); n != 1 || tmpl.Spec.Volumes[0].Name != rayspec.RayTokenVolumeName {
		t.Errorf("volumes: %+v", tmpl.Spec.Volumes)
	}
	if m := tmpl.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != rayspec.RayTokenMountPath {
		t.Errorf("mounts: %+v", m)
	}
}

func TestSubmitterJob(t *testing.T) {
	job := stored(trainingJob())
	k8sJob, err := SubmitterJob(job, clusterOf(job, nil), features.Static{})
	if err != nil {
		t.Fatal(err)
	}
	if k8sJob.Name != "train" || k8sJob.Namespace != "ml" || *k8sJob.Spec.BackoffLimit != DefaultSubmitterBackoffLimit {
		t.Errorf("job: %s/%s backoff %d", k8sJob.Namespace, k8sJob.Name, *k8sJob.Spec.BackoffLimit)
	}
	ref := k8sJob.OwnerReferences
	if len(ref) != 1 || ref[0].Kind != "RayJob" || ref[0].Name != "train" || ref[0].UID != "uid-1" || !ptr.Deref(ref[0].Controller, false) {
		t.Errorf("owner: %+v", ref)
	}
	job.Spec.SubmitterConfig = &rayv1.SubmitterConfig{BackoffLimit: ptr.To[int32](0)}
	if k8sJob, _ = SubmitterJob(job, clusterOf(job, nil), features.Static{}); *k8sJob.Spec.BackoffLimit != 0 {
		t.Errorf("submitterConfig.backoffLimit not used: %d", *k8sJob.Spec.BackoffLimit)
	}
}

func TestSidecarContainer(t *testing.T) {
	job := stored(trainingJob())
	for _, restart := range []bool{false, true} {
		c, err := SidecarContainer(job, clusterOf(job, nil), features.Static{features.SidecarSubmitterRestart: restart})
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != rayv1.SubmitterContainerName || c.Image != "rayproject/ray:2.52.0" || !strings.Contains(c.Args[0], "--address http://127.0.0.1:9265") {
			t.Errorf("sidecar: %+v", c)
		}
		if got := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyOnFailure; got != restart {
			t.Errorf("restart %v: policy %v", restart, c.RestartPolicy)
		}
		if checks := strings.Contains(c.Args[0], "ray job status"); checks != restart {
			t.Errorf("restart %v: checks the status first: %v", restart, checks)
		}
	}
}
