package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

// Warnings of the authentication and network isolation rules.
const (
	// WarnAuthWithoutMode: KubeRay turns authentication on only with mode "token".
	WarnAuthWithoutMode = "%s is not set: authentication stays off (as under KubeRay, only mode: token turns it on); set mode: token to require a token"
	// WarnNoDNSEgress: workers reach the head through its Service's DNS name.
	WarnNoDNSEgress = "%s: mode %s restricts egress and no egress rule of %s allows DNS (port 53): the pods cannot resolve the head Service's name, so workers will not start; add a rule such as ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]"
	// WarnAuthChangeRunningPods: pods get the token settings when they are created.
	WarnAuthChangeRunningPods = "%s changed: pods get authentication settings when they are created, so running pods keep the old ones until they are replaced (upgradeStrategy.type Recreate replaces them now)"
)

// TokenAuthenticationOffMessage explains why mode token is refused by a raygate without
// --token-authentication, and who can change that.
const TokenAuthenticationOffMessage = "token authentication is off on this raygate; a cluster admin enables it with the Helm value " +
	"tokenAuthentication.enabled=true (the manager's --token-authentication), which lets raygate get and create Secrets"

// TokenAuthenticationOff is the error of authOptions.mode token (at path) on a raygate
// without --token-authentication: admission's, and the RayCluster controller's for a stored
// cluster, which it then does not act on.
func TokenAuthenticationOff(path *field.Path) *field.Error {
	return field.Forbidden(path, TokenAuthenticationOffMessage)
}

// K8sTokenAuthOnRayService explains the refusal of authOptions.enableK8sTokenAuth on a
// RayService: KubeRay refuses it there, and raygate's RayService controller calls the
// dashboard with the token from the cluster's Secret, which this mode does not have.
const K8sTokenAuthOnRayService = "KubeRay does not support Kubernetes-delegated token authentication on a RayService; " +
	"use mode: token, with the Secret raygate generates or one named in secretName"

// K8sTokenAuthOnRayJob explains the refusal of authOptions.enableK8sTokenAuth on a RayJob:
// KubeRay refuses it there too.
const K8sTokenAuthOnRayJob = "KubeRay does not support Kubernetes-delegated token authentication on a RayJob; " +
	"use mode: token, with the Secret raygate generates or one named in secretName"

// WarnK8sTokenAuthRBAC: Ray checks tokens with the API server as the pods' ServiceAccount,
// and raygate grants that account nothing.
const WarnK8sTokenAuthRBAC = "%s: the pods' ServiceAccount needs create on tokenreviews (authentication.k8s.io) and subjectaccessreviews (authorization.k8s.io), " +
	"which raygate does not grant; bind a ClusterRole with them to it, or Ray rejects every request"

var (
	minTokenAuthVersion    = utilversion.MustParseGeneric(rayspec.MinRayVersionForTokenAuth)
	minK8sTokenAuthVersion = utilversion.MustParseGeneric(rayspec.MinRayVersionForK8sTokenAuth)
)

// authAndIsolation checks authOptions and networkPolicy. Only enableK8sTokenAuth on a
// RayService is refused on a stored object too: the others concern what admission can still
// prevent, and the controller acts sensibly on a stored object anyway.
func (c *check) authAndIsolation(oldSpec, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	errs, warnings := c.authOptions(oldSpec, spec, path)
	if c.admission() {
		errs = append(errs, c.networkPolicy(spec, path)...)
		warnings = append(warnings, dnsWarnings(spec, path)...)
	}
	return errs, warnings
}

func (c *check) authOptions(oldSpec, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	ao := spec.AuthOptions
	// A RayService's change of authOptions makes a new cluster, so only a RayCluster's
	// running pods keep old settings. A RayJob's cluster is the same: built anew for each
	// attempt, and refused the delegated mode as a RayService's is.
	serviceCluster := func() bool {
		return path.String() == rayClusterConfigPath.String() || path.String() == rayJobClusterPath.String()
	}
	if ao == nil {
		if oldSpec != nil && oldSpec.AuthOptions != nil && c.admission() && !serviceCluster() {
			return nil, []string{fmt.Sprintf(WarnAuthChangeRunningPods, path.Child("authOptions"))}
		}
		return nil, nil
	}
	isService := serviceCluster()
	p := path.Child("authOptions")
	var errs field.ErrorList
	k8s := ptr.Deref(ao.EnableK8sTokenAuth, false)
	if k8s && isService {
		// Any change under authOptions counts on update: the refused field is still there.
		why := K8sTokenAuthOnRayService
		if path.String() == rayJobClusterPath.String() {
			why = K8sTokenAuthOnRayJob
		}
		errs = append(errs, c.related(field.Forbidden(p.Child("enableK8sTokenAuth"), why), p))
	}
	if !c.admission() {
		return errs, nil
	}
	var warnings []string
	if ao.Mode == "" {
		warnings = append(warnings, fmt.Sprintf(WarnAuthWithoutMode, p.Child("mode")))
	}
	if oldSpec != nil && !isService && !equality.Semantic.DeepEqual(oldSpec.AuthOptions, ao) {
		warnings = append(warnings, fmt.Sprintf(WarnAuthChangeRunningPods, p))
	}
	if name := ao.SecretName; name != nil {
		sp := p.Child("secretName")
		switch {
		case ao.Mode != rayv1.AuthModeToken:
			errs = append(errs, c.related(field.Forbidden(sp, "a token Secret is used only with mode: token"), p.Child("mode")))
		case k8s && !isService:
			errs = append(errs, c.related(field.Forbidden(sp, "no token Secret is used when enableK8sTokenAuth is true: "+
				"each pod presents its ServiceAccount token; remove secretName or enableK8sTokenAuth"), p.Child("enableK8sTokenAuth")))
		case *name == "":
			errs = append(errs, field.Required(sp, "name the Secret holding the token, or leave secretName out to have raygate generate one"))
		default:
			for _, msg := range utilvalidation.IsDNS1123Subdomain(*name) {
				errs = append(errs, field.Invalid(sp, *name, msg))
			}
		}
	}
	if k8s && !isService {
		if ao.Mode != rayv1.AuthModeToken {
			errs = append(errs, c.related(field.Forbidden(p.Child("enableK8sTokenAuth"),
				"Kubernetes-delegated token authentication needs mode: token; set it, or remove enableK8sTokenAuth"), p.Child("mode")))
		} else if oldSpec == nil || !rayspec.K8sTokenAuth(oldSpec) {
			// Once, when the mode is turned on: not on every scale or relabel.
			warnings = append(warnings, fmt.Sprintf(WarnK8sTokenAuthRBAC, p.Child("enableK8sTokenAuth")))
		}
	}
	if ao.Mode == rayv1.AuthModeToken {
		if c.policy.TokenAuthenticationOff && !k8s {
			errs = append(errs, TokenAuthenticationOff(p.Child("mode")))
		}
		errs = append(errs, c.tokenAuthRayVersion(spec, path, k8s && !isService)...)
		errs = append(errs, managedAuthEnv(spec, path, k8s && !isService)...)
		if k8s && !isService {
			errs = append(errs, rayTokenVolumes(spec, path)...)
		}
	}
	return errs, warnings
}

// tokenAuthRayVersion: Ray older than 2.52.0 ignores RAY_AUTH_MODE, and older than 2.55.0
// RAY_ENABLE_K8S_TOKEN_AUTH, so the cluster would run open (or expect a token it never gets)
// while its owner believes it requires one.
func (c *check) tokenAuthRayVersion(spec *rayv1.RayClusterSpec, path *field.Path, k8s bool) field.ErrorList {
	vp, mode := path.Child("rayVersion"), path.Child("authOptions", "mode")
	need, minVersion := "authOptions.mode token needs Ray "+rayspec.MinRayVersionForTokenAuth+" or newer", minTokenAuthVersion
	if k8s {
		need, minVersion = "authOptions.enableK8sTokenAuth needs Ray "+rayspec.MinRayVersionForK8sTokenAuth+" or newer", minK8sTokenAuthVersion
	}
	related := []*field.Path{mode, path.Child("authOptions", "enableK8sTokenAuth")}
	if spec.RayVersion == "" {
		return field.ErrorList{c.related(field.Required(vp, need+"; set rayVersion to the version of the image"), related...)}
	}
	v, err := utilversion.ParseGeneric(spec.RayVersion)
	switch {
	case err != nil:
		return field.ErrorList{c.related(field.Invalid(vp, spec.RayVersion, need+"; rayVersion is not a version"), related...)}
	case v.LessThan(minVersion):
		return field.ErrorList{c.related(field.Invalid(vp, spec.RayVersion, need), related...)}
	}
	return nil
}

// managedAuthEnv refuses RAY_AUTH_MODE, RAY_AUTH_TOKEN and RAY_ENABLE_K8S_TOKEN_AUTH in the
// Ray containers and the autoscaler's env of a token-authenticated cluster: raygate sets
// them from authOptions, and a value given here would put the token inline in the pod spec
// or switch the kind of token behind authOptions' back.
func managedAuthEnv(spec *rayv1.RayClusterSpec, path *field.Path, k8s bool) field.ErrorList {
	var errs field.ErrorList
	source := "from the cluster's token Secret"
	if k8s {
		source = "for the pod's ServiceAccount token"
	}
	check := func(env []corev1.EnvVar, p *field.Path) {
		for i, e := range env {
			switch e.Name {
			case rayspec.EnvRayAuthMode, rayspec.EnvRayAuthToken:
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"),
					fmt.Sprintf("raygate sets %s %s when authOptions.mode is token; remove it", e.Name, source)))
			case rayspec.EnvRayEnableK8sTokenAuth:
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"),
					fmt.Sprintf("raygate sets %s from authOptions.enableK8sTokenAuth when authOptions.mode is token; remove it and set enableK8sTokenAuth instead", e.Name)))
			}
		}
	}
	forRayContainers(spec, path, func(c *corev1.Container, p *field.Path) { check(c.Env, p.Child("env")) })
	if o := spec.AutoscalerOptions; o != nil {
		check(o.Env, path.Child("autoscalerOptions", "env"))
	}
	return errs
}

// rayTokenVolumes refuses, in the delegated mode, a template volume or Ray mount that would
// take the place of the projected ServiceAccount token raygate mounts.
func rayTokenVolumes(spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	why := fmt.Sprintf("raygate mounts the pod's ServiceAccount token as volume %s at %s when authOptions.enableK8sTokenAuth is true; remove it",
		rayspec.RayTokenVolumeName, rayspec.RayTokenMountPath)
	mounts := func(ms []corev1.VolumeMount, p *field.Path) {
		for i, m := range ms {
			switch {
			case m.Name == rayspec.RayTokenVolumeName:
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), why))
			case m.MountPath == rayspec.RayTokenMountPath:
				errs = append(errs, field.Forbidden(p.Index(i).Child("mountPath"), why))
			}
		}
	}
	volumes := func(t *corev1.PodTemplateSpec, p *field.Path) {
		for i, v := range t.Spec.Volumes {
			if v.Name == rayspec.RayTokenVolumeName {
				errs = append(errs, field.Forbidden(p.Child("template", "spec", "volumes").Index(i).Child("name"), why))
			}
		}
	}
	volumes(&spec.HeadGroupSpec.Template, path.Child("headGroupSpec"))
	for i := range spec.WorkerGroupSpecs {
		volumes(&spec.WorkerGroupSpecs[i].Template, path.Child("workerGroupSpecs").Index(i))
	}
	forRayContainers(spec, path, func(c *corev1.Container, p *field.Path) { mounts(c.VolumeMounts, p.Child("volumeMounts")) })
	if o := spec.AutoscalerOptions; o != nil {
		mounts(o.VolumeMounts, path.Child("autoscalerOptions", "volumeMounts"))
	}
	return errs
}

// forRayContainers calls fn on the Ray container of the head's and each worker group's
// template, with its path.
func forRayContainers(spec *rayv1.RayClusterSpec, path *field.Path, fn func(*corev1.Container, *field.Path)) {
	one := func(t *corev1.PodTemplateSpec, p *field.Path) {
		if len(t.Spec.Containers) > rayv1.RayContainerIndex {
			fn(&t.Spec.Containers[rayv1.RayContainerIndex], p.Child("template", "spec", "containers").Index(rayv1.RayContainerIndex))
		}
	}
	one(&spec.HeadGroupSpec.Template, path.Child("headGroupSpec"))
	for i := range spec.WorkerGroupSpecs {
		one(&spec.WorkerGroupSpecs[i].Template, path.Child("workerGroupSpecs").Index(i))
	}
}

// networkPolicy checks spec.networkPolicy at admission: the feature gate, rules that the
// mode would ignore (KubeRay refuses them too) and per-group rules naming no group.
func (c *check) networkPolicy(spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	np := spec.NetworkPolicy
	if np == nil {
		return nil
	}
	p := path.Child("networkPolicy")
	var errs field.ErrorList
	if gate := features.RayClusterNetworkPolicy; !c.gates.Enabled(gate) {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("the %s feature gate is off; %s", gate, GateHint(string(gate)))))
	}
	mode := ptr.Deref(np.Mode, rayv1.NetworkPolicyDenyAll)
	rules := func(r *rayv1.NetworkPolicyRules, rp *field.Path) {
		if r == nil {
			return
		}
		if mode == rayv1.NetworkPolicyDenyAllEgress && len(r.IngressRules) > 0 {
			errs = append(errs, c.related(field.Forbidden(rp.Child("ingressRules"),
				fmt.Sprintf("mode %s does not restrict ingress, so ingress rules would have no effect; remove them or use mode DenyAll", mode)), p.Child("mode")))
		}
		if mode == rayv1.NetworkPolicyDenyAllIngress && len(r.EgressRules) > 0 {
			errs = append(errs, c.related(field.Forbidden(rp.Child("egressRules"),
				fmt.Sprintf("mode %s does not restrict egress, so egress rules would have no effect; remove them or use mode DenyAll", mode)), p.Child("mode")))
		}
	}
	rules(np.Head, p.Child("head"))
	rules(np.Worker, p.Child("worker"))
	groups := map[string]bool{}
	for i := range spec.WorkerGroupSpecs {
		groups[spec.WorkerGroupSpecs[i].GroupName] = true
	}
	seen := map[string]bool{}
	for i := range np.WorkerGroups {
		wg := &np.WorkerGroups[i]
		wp := p.Child("workerGroups").Index(i)
		rules(&wg.NetworkPolicyRules, wp)
		switch {
		case seen[wg.GroupName]:
			errs = append(errs, field.Duplicate(wp.Child("groupName"), wg.GroupName))
		case !groups[wg.GroupName]:
			errs = append(errs, c.related(field.Invalid(wp.Child("groupName"), wg.GroupName, "no worker group in workerGroupSpecs has this name"), path.Child("workerGroupSpecs")))
		}
		seen[wg.GroupName] = true
	}
	return errs
}

// dnsWarnings: under a mode that restricts egress, raygate (as KubeRay) allows only traffic
// between the cluster's pods, so without a rule for DNS the workers never find the head.
func dnsWarnings(spec *rayv1.RayClusterSpec, path *field.Path) []string {
	np := spec.NetworkPolicy
	if np == nil {
		return nil
	}
	mode := ptr.Deref(np.Mode, rayv1.NetworkPolicyDenyAll)
	if mode != rayv1.NetworkPolicyDenyAll && mode != rayv1.NetworkPolicyDenyAllEgress {
		return nil
	}
	p := path.Child("networkPolicy")
	var out []string
	if np.Head == nil || !allowsDNS(np.Head.EgressRules) {
		out = append(out, fmt.Sprintf(WarnNoDNSEgress, p, mode, "the head"))
	}
	for i := range spec.WorkerGroupSpecs {
		g := spec.WorkerGroupSpecs[i].GroupName
		rules := np.Worker
		for j := range np.WorkerGroups {
			if np.WorkerGroups[j].GroupName == g {
				rules = &np.WorkerGroups[j].NetworkPolicyRules
			}
		}
		if rules == nil || !allowsDNS(rules.EgressRules) {
			out = append(out, fmt.Sprintf(WarnNoDNSEgress, p, mode, "worker group "+g))
		}
	}
	return out
}

// allowsDNS: some rule allows port 53 (or every port) to some destination.
func allowsDNS(rules []networkingv1.NetworkPolicyEgressRule) bool {
	for _, r := range rules {
		if len(r.Ports) == 0 {
			return true
		}
		for _, port := range r.Ports {
			if port.Port == nil || (port.Port.Type == intstr.Int && port.Port.IntVal <= 53 && ptr.Deref(port.EndPort, port.Port.IntVal) >= 53) {
				return true
			}
		}
	}
	return false
}
