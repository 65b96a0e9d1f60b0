package raypod

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func redisFT(rc *rayv1.RayCluster) {
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
		RedisAddress:  "redis.team-a.svc:6379",
		RedisUsername: &rayv1.RedisCredential{Value: "ray"},
		RedisPassword: &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"}}},
	}
}

func legacyFT(rc *rayv1.RayCluster) {
	rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true", rayv1.ExternalStorageNamespaceKey: "legacy-ns"}
	rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"redis-password": "plain"}
	rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}}
}

func TestGCSFaultToleranceGoldens(t *testing.T) {
	golden(t, "head-gcsft-redis", HeadPod(cluster(redisFT), "hash1", Settings{}))
	rc := cluster(redisFT)
	golden(t, "worker-gcsft", WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{}))
	golden(t, "head-gcsft-legacy-annotation", HeadPod(cluster(legacyFT), "hash1", Settings{}))
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func TestGCSFaultToleranceSettings(t *testing.T) {
	cases := map[string]struct {
		mutate     func(*rayv1.RayCluster)
		node       rayv1.RayNodeType
		want       map[string]string // env var → value ("<from>" for valueFrom); "" means absent
		annotation map[string]string // pod annotation → value; "" means absent
		startCmd   []string          // substrings of the generated ray start command
	}{
		"off: head says so, nothing else": {
			node:       rayv1.HeadNode,
			want:       map[string]string{EnvRedisAddress: "", EnvExternalStorageNamespace: "", EnvGCSReconnectTimeout: ""},
			annotation: map[string]string{rayv1.FTEnabledKey: "false", rayv1.ExternalStorageNamespaceKey: ""},
		},
		"options: head gets the address, credentials by reference and the UID as namespace": {
			mutate: redisFT, node: rayv1.HeadNode,
			want: map[string]string{EnvRedisAddress: "redis.team-a.svc:6379", EnvRedisUsername: "ray", EnvRedisPassword: "<from>",
				EnvExternalStorageNamespace: "8a3c1e4e-0000-4000-8000-000000000001", EnvGCSReconnectTimeout: ""},
			annotation: map[string]string{rayv1.FTEnabledKey: "true", rayv1.ExternalStorageNamespaceKey: "8a3c1e4e-0000-4000-8000-000000000001"},
			startCmd:   []string{"--redis-password=$REDIS_PASSWORD", "--redis-username=$REDIS_USERNAME"},
		},
		"options: the namespace option wins over the annotation": {
			mutate: func(rc *rayv1.RayCluster) {
				redisFT(rc)
				rc.Annotations = map[string]string{rayv1.ExternalStorageNamespaceKey: "ann"}
				rc.Spec.GcsFaultToleranceOptions.ExternalStorageNamespace = "opt"
			},
			node:       rayv1.HeadNode,
			want:       map[string]string{EnvExternalStorageNamespace: "opt"},
			annotation: map[string]string{rayv1.ExternalStorageNamespaceKey: "opt"},
		},
		"options: the user's own namespace env var is kept, the options' address wins": {
			mutate: func(rc *rayv1.RayCluster) {
				redisFT(rc)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: EnvExternalStorageNamespace, Value: "mine"}, {Name: EnvRedisAddress, Value: "stale:1"}}
			},
			node: rayv1.HeadNode,
			want: map[string]string{EnvExternalStorageNamespace: "mine", EnvRedisAddress: "redis.team-a.svc:6379"},
		},
		"options: workers wait 600 s for a restarted GCS and get no Redis settings": {
			mutate: redisFT, node: rayv1.WorkerNode,
			want:       map[string]string{EnvGCSReconnectTimeout: "600", EnvRedisAddress: "", EnvRedisPassword: "", EnvExternalStorageNamespace: ""},
			annotation: map[string]string{rayv1.FTEnabledKey: ""},
		},
		"workers keep their own reconnect timeout": {
			mutate: func(rc *rayv1.RayCluster) {
				redisFT(rc)
				rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EnvGCSReconnectTimeout, Value: "120"}}
			},
			node: rayv1.WorkerNode,
			want: map[string]string{EnvGCSReconnectTimeout: "120"},
		},
		"legacy annotation: user's address kept, password copied for the cleanup Job, annotation namespace": {
			mutate: legacyFT, node: rayv1.HeadNode,
			want:       map[string]string{EnvRedisAddress: "redis:6379", EnvRedisPassword: "plain", EnvExternalStorageNamespace: "legacy-ns"},
			annotation: map[string]string{rayv1.FTEnabledKey: "true", rayv1.ExternalStorageNamespaceKey: "legacy-ns"},
			startCmd:   []string{"--redis-password=plain"},
		},
		"legacy annotation: workers too": {
			mutate: legacyFT, node: rayv1.WorkerNode,
			want: map[string]string{EnvGCSReconnectTimeout: "600"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var muts []func(*rayv1.RayCluster)
			if tc.mutate != nil {
				muts = append(muts, tc.mutate)
			}
			rc := cluster(muts...)
			var pod *corev1.Pod
			if tc.node == rayv1.HeadNode {
				pod = HeadPod(rc, "h", Settings{})
			} else {
				pod = WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
			}
			env := envOf(pod.Spec.Containers[rayv1.RayContainerIndex])
			for k, want := range tc.want {
				e, ok := env[k]
				got := e.Value
				if e.ValueFrom != nil {
					got = "<from>"
				}
				if !ok {
					got = ""
				}
				if got != want {
					t.Errorf("env %s = %q, want %q", k, got, want)
				}
			}
			for k, want := range tc.annotation {
				if got := pod.Annotations[k]; got != want {
					t.Errorf("annotation %s = %q, want %q", k, got, want)
				}
			}
			cmd := env[EnvGeneratedStartCmd].Value
			for _, s := range tc.startCmd {
				if !strings.Contains(cmd, s) {
					t.Errorf("start command %q lacks %q", cmd, s)
				}
			}
		})
	}
}

// The spec is not changed by building pods (the start params are a copy).
func TestGCSFaultToleranceLeavesSpecAlone(t *testing.T) {
	rc := cluster(redisFT)
	before := rc.DeepCopy()
	HeadPod(rc, "h", Settings{})
	if d := cmp.Diff(before, rc); d != "" {
		t.Errorf("spec changed:\n%s", d)
	}
}
