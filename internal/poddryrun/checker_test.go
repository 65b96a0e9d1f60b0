package poddryrun

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// fakeAPIServer answers dry-runs by the pod's generateName, and records them.
type fakeAPIServer struct {
	mu       sync.Mutex
	sent     []string
	answers  map[string]func(*corev1.Pod) ([]string, error)
	blocking bool // wait for the caller's deadline
}

func (f *fakeAPIServer) DryRunCreate(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	f.mu.Lock()
	f.sent = append(f.sent, pod.GenerateName)
	answer := f.answers[pod.GenerateName]
	f.mu.Unlock()
	if f.blocking {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if answer == nil {
		return nil, nil
	}
	return answer(pod)
}

func (f *fakeAPIServer) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent
	f.sent = nil
	return out
}

const (
	headName   = "raygate-dry-run-head-"
	workerName = "raygate-dry-run-small-group-worker-"
	otherName  = "raygate-dry-run-big-worker-"
)

// twoGroups is a defaulted RayCluster with a head and worker groups small-group and big.
func twoGroups(change func(rc *rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("small-group", 1), builders.WorkerGroup("big", 2)).Obj()
	if change != nil {
		change(rc)
	}
	defaulting.RayCluster(rc)
	return rc
}

func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func invalidEnv(*corev1.Pod) ([]string, error) {
	return nil, apierrors.NewInvalid(podKind, workerName, field.ErrorList{
		field.Invalid(field.NewPath("spec", "containers").Index(0).Child("env").Index(0).Child("name"), "1BAD=", "a valid environment variable name must consist only of printable ASCII characters other than '='"),
		field.Invalid(field.NewPath("spec", "initContainers").Index(0).Child("env").Index(0).Child("name"), "1BAD=", "a valid environment variable name must consist only of printable ASCII characters other than '='"),
	})
}

func TestCheckMapsRefusalsAndWarnings(t *testing.T) {
	rc := twoGroups(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "1BAD="}}
		rc.Spec.WorkerGroupSpecs[1].Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("4")
	})
	api := &fakeAPIServer{answers: map[string]func(*corev1.Pod) ([]string, error){
		workerName: invalidEnv,
		otherName: func(*corev1.Pod) ([]string, error) {
			return nil, forbidden("maximum cpu usage per Container is 2, but limit is 4")
		},
		headName: func(*corev1.Pod) ([]string, error) {
			return []string{"spec.containers[0].ports[0]: duplicate port", "a policy warns"}, nil
		},
	}}
	c := New(api)
	rep := c.Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(rc, "ns", raypod.Settings{}), PodSecurity: validation.PodSecurityEnforce, Budget: time.Second})
	wantErrs := []string{
		`spec.workerGroupSpecs[0].template.spec.containers[0].env[0].name: Invalid value: "1BAD=": a valid environment variable name must consist only of printable ASCII characters other than '='`,
		`spec.workerGroupSpecs[1].template: Forbidden: the API server refuses the pods of worker group "big": maximum cpu usage per Container is 2, but limit is 4`,
	}
	errs, warnings := rep.Merge(nil, nil)
	if d := cmp.Diff(wantErrs, messages(errs)); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	wantWarnings := []string{"spec.headGroupSpec.template.spec.containers[0].ports: duplicate port", "spec.headGroupSpec.template: a policy warns"}
	if d := cmp.Diff(wantWarnings, warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	if got := len(api.calls()); got != 3 {
		t.Errorf("sent %d dry-runs; want 3 (head, two groups)", got)
	}

	// Admitted pods are not sent again in this namespace; refused ones are.
	c.Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(rc, "ns", raypod.Settings{})})
	if d := cmp.Diff([]string{otherName, workerName}, sorted(api.calls())); d != "" {
		t.Errorf("second check sent (-want +got):\n%s", d)
	}
	c.Check(context.Background(), Request{Namespace: "other", Pods: RayClusterPods(rc, "other", raypod.Settings{})})
	if got := len(api.calls()); got != 3 {
		t.Errorf("another namespace: sent %d; want 3", got)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// An admitted pod is sent again once AdmittedFor has passed: a LimitRange or policy added
// since is seen.
func TestAdmittedPodsAreSentAgainLater(t *testing.T) {
	now := time.Now()
	api := &fakeAPIServer{}
	c := newChecker(api, DefaultInFlight, func() time.Time { return now })
	r := Request{Namespace: "ns", Pods: RayClusterPods(twoGroups(nil), "ns", raypod.Settings{})}
	c.Check(context.Background(), r)
	c.Check(context.Background(), r)
	if got := len(api.calls()); got != 3 {
		t.Fatalf("sent %d; want 3, then none", got)
	}
	now = now.Add(AdmittedFor)
	c.Check(context.Background(), r)
	if got := len(api.calls()); got != 3 {
		t.Errorf("after %s: sent %d; want 3", AdmittedFor, got)
	}
}

// On update only the pods that changed are sent: none for a scale or a label, the changed
// group's for a template change. The pods are built for a placeholder name, so objects that
// differ only in their names share the table.
func TestUpdatesSendOnlyChangedPods(t *testing.T) {
	old := twoGroups(nil)
	scaled := old.DeepCopy()
	scaled.Spec.WorkerGroupSpecs[1].Replicas = ptr.To[int32](7)
	scaled.Labels = map[string]string{"team": "ml"}
	changed := old.DeepCopy()
	changed.Spec.WorkerGroupSpecs[1].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	renamed := old.DeepCopy()
	renamed.Name = "another-name"
	tests := []struct {
		name string
		obj  *rayv1.RayCluster
		want []string
	}{
		{"scale and label", scaled, nil},
		{"one template changed", changed, []string{otherName}},
		{"another name", renamed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPIServer{}
			New(api).Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(tt.obj, "ns", raypod.Settings{}), Stored: RayClusterPods(old, "ns", raypod.Settings{})})
			if d := cmp.Diff(tt.want, api.calls()); d != "" {
				t.Errorf("sent (-want +got):\n%s", d)
			}
		})
	}
}

// Past the caller's deadline the pods not checked are named in one warning, and Check returns.
func TestOutOfTimeIsAWarning(t *testing.T) {
	api := &fakeAPIServer{blocking: true}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep := New(api).Check(ctx, Request{Namespace: "ns", Pods: RayClusterPods(twoGroups(nil), "ns", raypod.Settings{}), Budget: 3 * time.Second})
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("Check took %s past its deadline", waited)
	}
	want := []string{`admission's time budget (3s) ran out before the API server's dry-run of the head pod, the pods of worker group "small-group" and the pods of worker group "big"; it checks them when raygate creates them`}
	if len(rep.Errors) > 0 || !cmp.Equal(want, rep.Warnings) {
		t.Errorf("errors %v, warnings (-want +got):\n%s", rep.Errors, cmp.Diff(want, rep.Warnings))
	}
}

// The dry-runs in flight are bounded per process, whatever the number of reviews.
func TestInFlightIsBounded(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	api := creatorFunc(func(context.Context, *corev1.Pod) ([]string, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil, nil
	})
	c := newChecker(api, 3, time.Now)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			rc := twoGroups(func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = strings.Repeat("x", i+1)
			})
			c.Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(rc, "ns", raypod.Settings{})})
		})
	}
	wg.Wait()
	if most > 3 {
		t.Errorf("%d dry-runs in flight; want at most 3", most)
	}
}

type creatorFunc func(context.Context, *corev1.Pod) ([]string, error)

func (f creatorFunc) DryRunCreate(ctx context.Context, p *corev1.Pod) ([]string, error) {
	return f(ctx, p)
}

func TestNotCheckedAndServiceAccountWarnings(t *testing.T) {
	rc := twoGroups(func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Template.Spec.ServiceAccountName = "trainer" })
	api := &fakeAPIServer{answers: map[string]func(*corev1.Pod) ([]string, error){
		workerName: func(*corev1.Pod) ([]string, error) {
			return nil, forbidden(`error looking up service account ns/trainer: serviceaccount "trainer" not found`)
		},
		otherName: func(*corev1.Pod) ([]string, error) {
			return nil, apierrors.NewBadRequest(`admission webhook "audit.example.com" does not support dry run`)
		},
	}}
	rep := New(api).Check(context.Background(), Request{Namespace: "ns", Pods: RayClusterPods(rc, "ns", raypod.Settings{})})
	want := []string{
		`spec.workerGroupSpecs[0].template.spec.serviceAccountName: the API server refuses the pods of worker group "small-group" while their ServiceAccount does not exist (error looking up service account ns/trainer: serviceaccount "trainer" not found); create it, and the rest of the pods' checks run on the next apply`,
		`spec.workerGroupSpecs[1].template: the API server could not dry-run the pods of worker group "big" (admission webhook "audit.example.com" does not support dry run); it checks them when raygate creates them`,
	}
	if len(rep.Errors) > 0 || !cmp.Equal(want, rep.Warnings) {
		t.Errorf("errors %v, warnings (-want +got):\n%s", rep.Errors, cmp.Diff(want, rep.Warnings))
	}
}

// Reviews that need the same pods at the same time wait for one dry-run of each.
func TestConcurrentReviewsShareADryRun(t *testing.T) {
	var mu sync.Mutex
	sent := 0
	api := creatorFunc(func(context.Context, *corev1.Pod) ([]string, error) {
		mu.Lock()
		sent++
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		return []string{"a warning"}, nil
	})
	c := New(api)
	pods := RayClusterPods(twoGroups(nil), "ns", raypod.Settings{})
	var wg sync.WaitGroup
	reports := make([]Report, 10)
	for i := range reports {
		wg.Go(func() { reports[i] = c.Check(context.Background(), Request{Namespace: "ns", Pods: pods}) })
	}
	wg.Wait()
	if sent != 3 {
		t.Errorf("sent %d dry-runs for 10 reviews of the same 3 pods; want 3", sent)
	}
	for i, r := range reports {
		if len(r.Warnings) != 3 {
			t.Errorf("review %d got warnings %v; want the API server's for each pod", i, r.Warnings)
		}
	}
}
