package raycluster_test

import (
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
	"sigs.k8s.io/yaml"

	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// The API server refuses a Role that grants more than its creator holds (unless the creator
// may escalate, which raygate may not): every rule of the autoscaler's Role must be covered
// by raygate's own ClusterRole, generated from the controllers' RBAC markers.
func TestAutoscalerRoleGrantsOnlyWhatRaygateHolds(t *testing.T) {
	raw, err := os.ReadFile("../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var held rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &held); err != nil {
		t.Fatal(err)
	}
	role := raypod.AutoscalerRole(builders.RayCluster("demo", "ns").Autoscaling().Obj())
	if ok, missing := rbacvalidation.Covers(held.Rules, role.Rules); !ok {
		t.Errorf("the autoscaler Role grants what raygate does not hold: %+v (add an RBAC marker)", missing)
	}
}
