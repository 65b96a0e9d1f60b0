package main

import (
	"fmt"
	"strings"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/localmode"
	"github.com/raygate/raygate/internal/rayspec"
)

// ServeSeriesQuery counts the Ray Serve request series per namespace (docs/monitoring.md's check).
const ServeSeriesQuery = "count by (namespace) (ray_serve_num_http_requests_total)"

// nextSteps is what `make run` prints once the sample is Ready: how to reach the local
// control plane and what to try, with commands that work when pasted as they are. curl,
// when set, sends a request through the Gateway.
func nextSteps(env *localmode.Env, svc *rayv1.RayService, curl string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("")
	p("In another terminal:")
	p("")
	p("  export KUBECONFIG=%s", env.Kubeconfig)
	p("  alias kubectl=%s   # kubectl built for this control plane (any recent kubectl works)", env.KubectlPath)
	p("")
	if svc != nil {
		name := svc.Name
		p("  # Watch the RayService: readiness, upgrade progress, traffic and capacity of the new cluster")
		p("  kubectl get rayservice %s -o wide -w", name)
		p("")
		p("  # Start an incremental upgrade: change the Ray image")
		p("  kubectl patch rayservice %s --type=json -p '%s'", name, localmode.ImagePatch(svc, localmode.NextImage(localmode.RayImage(svc))))
		p("")
		if curl != "" {
			p("  # Send a request through the Gateway: Traefik routes it by the HTTPRoute's weights to a serve pod")
			p("  %s", curl)
		} else {
			p("  # The Gateway is Traefik at %s; the serve pods' addresses are not on loopback, so no request is sent there", env.Gateway.URL())
		}
		p("")
		p("  # See the HTTPRoute weights move from the old cluster to the new one")
		p(`  kubectl get httproute %s -o jsonpath='{range .spec.rules[0].backendRefs[*]}{.name}{"\t"}{.weight}{"\n"}{end}'`, rayspec.HTTPRouteName(name))
		p("  kubectl get rayclusters,pods,gateway,httproute")
		p("")
	}
	if u := env.PrometheusURL(); u != "" {
		p("  # Prometheus at %s scrapes raygate, Traefik and every Ray pod's metrics port (the simulated", u)
		p("  # Ray Serve series, labelled namespace and pod as a PodMonitor labels them); raygate's UpgradePolicy")
		p("  # gates query it")
		p("  curl -s %s/api/v1/query --data-urlencode 'query=%s'", u, ServeSeriesQuery)
		p("")
	}
	p("  # Run a batch job (K8sJobMode): raygate creates its RayCluster, a submitter Job runs `ray job submit`")
	p("  # against the simulated dashboard, and JOB STATUS goes PENDING, RUNNING, SUCCEEDED; the cluster")
	p("  # is deleted ttlSecondsAfterFinished later")
	p("  kubectl apply -f %s", localmode.SamplePath(localmode.RayJobSample))
	p("  kubectl get rayjobs -w")
	p("  kubectl raygate status rayjob %s", localmode.RayJobSampleName)
	p("")
	p("  # Try an invalid spec: admission rejects it with every problem listed by field path")
	p("  kubectl apply -f %s", localmode.SamplePath(localmode.InvalidSample))
	p("")
	p("  # Pod Security at admission: refused in %s (restricted), created in default (privileged)", localmode.RestrictedNamespace)
	p("  kubectl apply -n %s -f %s", localmode.RestrictedNamespace, localmode.SamplePath(localmode.RayClusterSample))
	p("")
	p("  # Or let a script do all of the above and check the upgrade's invariants")
	p("  make demo")
	if env.PrometheusURL() != "" {
		p("  # ... with the upgrade held by an UpgradePolicy gate on the new cluster's Serve error ratio")
		p(`  make demo ARGS="--gate"`)
	}
	p("")
	p("Logs: raygate %s, control plane components %s/", env.OperatorLog(), env.Cluster.LogDir)
	return b.String()
}
