package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

func opts(s *rayv1.RayService) *rayv1.ClusterUpgradeOptions {
	return s.Spec.UpgradeStrategy.ClusterUpgradeOptions
}

func TestRayService(t *testing.T) {
	cases := map[string]struct {
		svc      *rayv1.RayService
		gates    features.Gates
		want     field.ErrorList
		warnings []string
	}{
		"valid NewCluster": {svc: service(nil)},
		"valid None": {svc: service(func(s *rayv1.RayService) {
			s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.None)}
		})},
		"valid incremental":                            {svc: incremental(nil), gates: gateOn},
		"incremental with step equal to surge":         {svc: incremental(func(s *rayv1.RayService) { opts(s).StepSizePercent = ptr.To[int32](40) }), gates: gateOn},
		"zero deletion delay deletes old clusters now": {svc: service(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](0) })},

		// Names.
		"name too long for the derived names": {
			svc:  service(func(s *rayv1.RayService) { s.Name = strings.Repeat("s", 48) }),
			want: field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},
		"longest name that fits": {svc: service(func(s *rayv1.RayService) { s.Name = strings.Repeat("s", 47) })},
		"name not DNS-1035": {
			svc:  service(func(s *rayv1.RayService) { s.Name = "Fruit" }),
			want: field.ErrorList{field.Invalid(p("metadata.name"), nil, "")},
		},

		// Strategy and gate.
		"unknown strategy": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeType("BlueGreen"))}
			}),
			want: field.ErrorList{field.NotSupported[string](p("spec.upgradeStrategy.type"), nil, nil)},
		},
		"incremental with the gate off": {
			svc: incremental(nil), gates: gateOff,
			want: field.ErrorList{field.Forbidden(p("spec.upgradeStrategy.type"), "")},
		},
		"incremental without autoscaling": {
			svc: incremental(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.EnableInTreeAutoscaling = nil }), gates: gateOn,
			want: field.ErrorList{field.Required(p("spec.rayClusterConfig.enableInTreeAutoscaling"), "")},
		},
		"incremental with autoscaling off": {
			svc: incremental(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(false) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.rayClusterConfig.enableInTreeAutoscaling"), nil, "")},
		},
		"incremental without options": {
			svc: incremental(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy.ClusterUpgradeOptions = nil }), gates: gateOn,
			want: field.ErrorList{field.Required(p("spec.upgradeStrategy.clusterUpgradeOptions"), "")},
		},
		"incremental with empty options": {
			svc: incremental(func(s *rayv1.RayService) {
				s.Spec.UpgradeStrategy.ClusterUpgradeOptions = &rayv1.ClusterUpgradeOptions{}
			}), gates: gateOn,
			want: field.ErrorList{
				field.Required(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), ""),
				field.Required(p("spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds"), ""),
				field.Required(p("spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"), ""),
			},
			warnings: []string{"spec.upgradeStrategy.clusterUpgradeOptions.maxSurgePercent is 100: the new cluster may scale to 100% while the old one still runs, so an upgrade can need 200% of the cluster's capacity; lower it to upgrade in smaller steps"},
		},
		"maxSurgePercent 0": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).MaxSurgePercent = ptr.To[int32](0) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.maxSurgePercent"), nil, "")},
		},
		"maxSurgePercent 101": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).MaxSurgePercent = ptr.To[int32](101) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.maxSurgePercent"), nil, "")},
		},
		"stepSizePercent 0 would stall the upgrade": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).StepSizePercent = ptr.To[int32](0) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), nil, "")},
		},
		"stepSizePercent above maxSurgePercent": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).StepSizePercent = ptr.To[int32](41) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), nil, "")},
		},
		"intervalSeconds 0": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).IntervalSeconds = ptr.To[int32](0) }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds"), nil, "")},
		},
		"gatewayClassName not a DNS-1123 subdomain": {
			svc: incremental(func(s *rayv1.RayService) { opts(s).GatewayClassName = "Istio_Gateway" }), gates: gateOn,
			want: field.ErrorList{field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"), nil, "")},
		},
		"negative deletion delay": {
			svc:  service(func(s *rayv1.RayService) { s.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1) }),
			want: field.ErrorList{field.Invalid(p("spec.rayClusterDeletionDelaySeconds"), nil, "")},
		},

		// Cluster config.
		"cluster rules apply under rayClusterConfig": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](5)
				s.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](2)
			}),
			want: field.ErrorList{field.Invalid(p("spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas"), nil, "")},
		},
		"upgradeStrategy inside rayClusterConfig": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			}),
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterConfig.upgradeStrategy"), "")},
		},
		"head Service name on a RayService": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}}
			}),
			want: field.ErrorList{field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.headService.metadata.name"), "")},
		},
		"managedBy MultiKueue": {
			svc: service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To(MultiKueueManager) }),
		},
		"managedBy unknown": {
			svc:  service(func(s *rayv1.RayService) { s.Spec.ManagedBy = ptr.To("someone/else") }),
			want: field.ErrorList{field.NotSupported[string](p("spec.managedBy"), nil, nil)},
		},
		"suspend": {
			svc: service(func(s *rayv1.RayService) { s.Spec.Suspend = true }),
		},
		"unsupported fields": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
				s.Spec.RayClusterSpec.RayVersion = "2.52.0"
				s.Spec.RayClusterSpec.TLSOptions = &rayv1.TLSOptions{}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.rayClusterConfig.tlsOptions"), ""),
				field.Forbidden(p("spec.rayClusterConfig.authOptions.enableK8sTokenAuth"), ""),
			},
		},

		// Warnings.
		"deprecated thresholds": {
			svc: service(func(s *rayv1.RayService) {
				s.Spec.ServiceUnhealthySecondThreshold = ptr.To[int32](900)
				s.Spec.DeploymentUnhealthySecondThreshold = ptr.To[int32](300)
			}),
			warnings: []string{
				"spec.serviceUnhealthySecondThreshold is deprecated and ignored; remove it",
				"spec.deploymentUnhealthySecondThreshold is deprecated and ignored; remove it",
			},
		},
		"risky incremental options": {
			svc: incremental(func(s *rayv1.RayService) {
				opts(s).MaxSurgePercent = nil // defaults to 100
				opts(s).IntervalSeconds = ptr.To[int32](5)
			}),
			gates: gateOn,
			warnings: []string{
				"spec.upgradeStrategy.clusterUpgradeOptions.maxSurgePercent is 100: the new cluster may scale to 100% while the old one still runs, so an upgrade can need 200% of the cluster's capacity; lower it to upgrade in smaller steps",
				"spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds is 5: with less than 10 seconds between traffic steps the Ray autoscaler may lag behind, so traffic can reach the new cluster before its pods are ready",
			},
		},
		"head out of the serve Service and no worker at start": {
			svc: incremental(func(s *rayv1.RayService) {
				s.Spec.ExcludeHeadPodFromServeSvc = true
				s.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](0)
			}),
			gates: gateOn,
			warnings: []string{
				"spec.excludeHeadPodFromServeSvc is true and every worker group has minReplicas 0: a cluster created for an incremental upgrade starts at minReplicas, so it has no pod to serve from until the Ray autoscaler adds a worker, and the first traffic step waits until then; set minReplicas to 1 or more on a worker group that serves",
			},
		},
		"head out of the serve Service with a worker at start": {
			svc: incremental(func(s *rayv1.RayService) {
				s.Spec.ExcludeHeadPodFromServeSvc = true
				s.Spec.RayClusterSpec.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](1)
			}),
			gates: gateOn,
		},
		"options with a strategy that ignores them": {
			svc:      incremental(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy.Type = ptr.To(rayv1.NewCluster) }),
			warnings: []string{"spec.upgradeStrategy.clusterUpgradeOptions is ignored with upgradeStrategy.type NewCluster; it is used only with NewClusterWithIncrementalUpgrade"},
		},
		"replicas clamped in rayClusterConfig": {
			svc:      service(func(s *rayv1.RayService) { s.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](11) }),
			warnings: []string{"spec.rayClusterConfig.workerGroupSpecs[0].replicas: 11 is outside [minReplicas 0, maxReplicas 10] and will be clamped to 10"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gates := tc.gates
			if gates == nil {
				gates = gateOff
			}
			errs, warnings := RayService(tc.svc, gates)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestGateErrorSaysHowToEnable(t *testing.T) {
	errs, _ := RayService(incremental(nil), gateOff)
	want := "spec.upgradeStrategy.type: Forbidden: NewClusterWithIncrementalUpgrade needs the RayServiceIncrementalUpgrade feature gate, which is disabled; " +
		"enable it with --feature-gates=RayServiceIncrementalUpgrade=true on the manager, or the Helm value featureGates.RayServiceIncrementalUpgrade=true"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	svc := incremental(func(s *rayv1.RayService) {
		s.Name = strings.Repeat("x", 50)
		opts(s).StepSizePercent = ptr.To[int32](0)
		s.Spec.RayClusterSpec.WorkerGroupSpecs[0].GroupName = "Bad_Group"
		s.Spec.ServeConfigV2 = "applications:\n  - name: a\n    route_prefix: a\n"
	})
	errs, _ := RayService(svc, gateOff)
	want := field.ErrorList{
		field.Invalid(p("metadata.name"), nil, ""),
		field.Forbidden(p("spec.upgradeStrategy.type"), ""),
		field.Invalid(p("spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent"), nil, ""),
		field.Invalid(p("spec.rayClusterConfig.workerGroupSpecs[0].groupName"), nil, ""),
		field.Required(p("spec.serveConfigV2.applications[0].import_path"), ""),
		field.Invalid(p("spec.serveConfigV2.applications[0].route_prefix"), nil, ""),
	}
	diffErrors(t, want, errs)
}

func TestGatewayClassHelpers(t *testing.T) {
	cases := []struct {
		name   string
		svc    *rayv1.RayService
		want   string
		wantOK bool
	}{
		{name: "incremental", svc: incremental(nil), want: "istio", wantOK: true},
		{name: "NewCluster", svc: service(nil)},
		{name: "NewCluster with ignored options", svc: incremental(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy.Type = ptr.To(rayv1.NewCluster) })},
		{name: "malformed name is an error, not a lookup", svc: incremental(func(s *rayv1.RayService) { opts(s).GatewayClassName = "a b" })},
		{name: "no options", svc: incremental(func(s *rayv1.RayService) { s.Spec.UpgradeStrategy.ClusterUpgradeOptions = nil })},
		{name: "being deleted", svc: incremental(func(s *rayv1.RayService) { s.DeletionTimestamp = &metav1.Time{} })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := GatewayClassToCheck(tc.svc)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("GatewayClassToCheck = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	path := "spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"
	diffWarnings(t, nil, GatewayClassWarnings("istio", GatewayClassFound))
	diffWarnings(t, nil, GatewayClassWarnings("istio", GatewayClassUnknown))
	diffWarnings(t, []string{fmt.Sprintf(`%s: GatewayClass "istio" does not exist yet; an incremental upgrade cannot route traffic until it is created`, path)},
		GatewayClassWarnings("istio", GatewayClassNotFound))
	diffWarnings(t, []string{path + ": the Gateway API CRDs (gateway.networking.k8s.io) are not installed in this cluster; incremental upgrades need them and a Gateway controller"},
		GatewayClassWarnings("istio", GatewayAPINotInstalled))
}
