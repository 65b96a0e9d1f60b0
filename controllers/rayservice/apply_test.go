package rayservice

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
)

// recorder is an executor that notes what it is asked, in order, and fails at the call
// numbered failAt (-1: never).
type recorder struct {
	calls  *[]string
	failAt int
}

func (x recorder) call(what string) error {
	*x.calls = append(*x.calls, what)
	if len(*x.calls)-1 == x.failAt {
		return errors.New(what + " failed")
	}
	return nil
}

func (x recorder) apply(actions []plan.Action) error {
	for _, a := range actions {
		if err := x.call(a.String()); err != nil {
			return err
		}
	}
	return nil
}

func (x recorder) submit(s plan.SubmitServeConfig) error {
	return x.call("submit to " + s.Cluster.Name)
}

// The cluster actions come first (a submission goes to the cluster as they leave it), then
// the submissions, then the other actions; the first failure stops the pass.
func TestCarryOutEffectsInOrderUpToTheFirstFailure(t *testing.T) {
	cluster := func(name string) *rayv1.RayCluster {
		return &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	effects := plan.Effects{
		ClusterActions: []plan.Action{plan.CreateCluster{Cluster: cluster("svc-b")}},
		Submits:        []plan.SubmitServeConfig{{Cluster: cluster("svc-a")}, {Cluster: cluster("svc-b")}},
		Actions:        []plan.Action{plan.DeleteCluster{Cluster: cluster("svc-old")}},
	}
	all := []string{"create RayCluster svc-b", "submit to svc-a", "submit to svc-b", "delete RayCluster svc-old"}
	for failAt := -1; failAt < len(all); failAt++ {
		var calls []string
		err := carryOutEffects(effects, recorder{calls: &calls, failAt: failAt})
		want := all
		if failAt >= 0 {
			want = all[:failAt+1]
		}
		if !slices.Equal(calls, want) || (err != nil) != (failAt >= 0) {
			t.Errorf("failing call %d: calls %q, error %v; want calls %q", failAt, calls, err, want)
		}
	}
}
