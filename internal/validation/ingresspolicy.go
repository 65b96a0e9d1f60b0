package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// Where each Ingress setting is changed, for error messages.
const (
	ingressClassesSetting     = "the manager's --allowed-ingress-classes, Helm value policy.allowedIngressClasses"
	ingressHostsSetting       = "the manager's --allowed-ingress-hosts, Helm value policy.allowedIngressHosts"
	ingressAnnotationsSetting = "the manager's --allowed-ingress-annotations, Helm value policy.allowedIngressAnnotations"
)

// WarnIngressAnnotationNotCopied: an Ingress controller's annotation on a cluster with
// enableIngress that the admin does not list is not copied to the Ingress.
const WarnIngressAnnotationNotCopied = "%s is not copied to the dashboard Ingress: the admin does not list it (%s)"

// UnsafeIngressAnnotationDetail is the refusal of a snippet, authentication, configuration,
// mirroring or alias annotation meant for the dashboard Ingress.
const UnsafeIngressAnnotationDetail = "raygate never copies snippet, authentication, configuration, mirroring or alias annotations to the dashboard Ingress it creates with its own rights; remove it, or create your own Ingress for the head Service"

// ingressPolicy checks the dashboard Ingress a cluster asks for (headGroupSpec.enableIngress)
// against the admin's policy, at admission: its IngressClass (the class annotation), its
// hosts (ingressOptions.host and tls[*].hosts) and the Ingress controller annotations
// meant for it. meta is the object the cluster's annotations come from (the RayCluster, or
// the RayService or RayJob that creates it); path is the cluster spec's.
func (c *check) ingressPolicy(meta *metav1.ObjectMeta, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	head := &spec.HeadGroupSpec
	if !c.admission() || !ptr.Deref(head.EnableIngress, false) {
		return nil, nil
	}
	enablePath := path.Child("headGroupSpec", "enableIngress")
	p := c.policy.Ingress
	ns := meta.Namespace
	var errs field.ErrorList
	var warnings []string
	for _, k := range slices.Sorted(maps.Keys(meta.Annotations)) {
		if !raypod.IngressControllerAnnotation(k) && !p.ListsAnnotation(k) {
			continue // not meant for an Ingress; never copied
		}
		switch {
		case raypod.UnsafeIngressAnnotation(k):
			errs = append(errs, c.related(field.Forbidden(annotationsPath.Key(k), UnsafeIngressAnnotationDetail), enablePath))
		case !p.CopiesAnnotation(k) && k != raypod.IngressClassAnnotationKey:
			warnings = append(warnings, fmt.Sprintf(WarnIngressAnnotationNotCopied, annotationsPath.Key(k), ingressAnnotationsSetting))
		}
	}
	if !p.Enabled() {
		return append(errs, field.Forbidden(enablePath, fmt.Sprintf(
			"dashboard Ingresses are off on this cluster: the admin allows no IngressClass (%s); expose the dashboard another way, or ask the admin", ingressClassesSetting))), warnings
	}
	if p.RouteInstead {
		// An OpenShift Route has no class and the router picks its host: only the
		// namespace must be allowed.
		if !p.AllowsExposure(ns) {
			errs = append(errs, field.Forbidden(enablePath, fmt.Sprintf(
				"dashboards of namespace %s may not be exposed: the admin lists no IngressClass for it (%s), which also governs OpenShift Routes", ns, ingressClassesSetting)))
		}
		return errs, warnings
	}
	classPath := annotationsPath.Key(raypod.IngressClassAnnotationKey)
	if class := meta.Annotations[raypod.IngressClassAnnotationKey]; !p.AllowsClass(ns, class) {
		allowed := listOrNone(p.ClassesFor(ns))
		if class == "" {
			errs = append(errs, c.related(field.Required(classPath, fmt.Sprintf(
				"name the IngressClass of the dashboard Ingress; allowed in namespace %s: %s (%s)", ns, allowed, ingressClassesSetting)), enablePath))
		} else {
			errs = append(errs, c.related(field.Forbidden(classPath, fmt.Sprintf(
				"IngressClass %q is not allowed in namespace %s; allowed: %s (%s)", class, ns, allowed, ingressClassesSetting)), enablePath))
		}
	}
	optsPath := path.Child("headGroupSpec", "ingressOptions")
	o := head.IngressOptions
	if o == nil {
		o = &rayv1.IngressOptions{}
	}
	errs = append(errs, c.ingressHost(p, ns, ptr.Deref(o.Host, ""), optsPath.Child("host"), enablePath)...)
	for i, t := range o.TLS {
		for j, h := range t.Hosts {
			errs = append(errs, c.ingressHost(p, ns, h, optsPath.Child("tls").Index(i).Child("hosts").Index(j), enablePath)...)
		}
	}
	return errs, warnings
}

// ingressHost: a host the policy allows in the namespace; "" is a rule serving every host.
func (c *check) ingressHost(p raypod.IngressPolicy, ns, host string, path, enablePath *field.Path) field.ErrorList {
	if p.AllowsHost(ns, host) {
		return nil
	}
	allowed := "none"
	if hosts := p.HostsFor(ns); len(hosts) > 0 {
		allowed = strings.Join(hosts, ", ") + " and names under them"
	}
	if host == "" {
		return field.ErrorList{c.related(field.Required(path, fmt.Sprintf(
			"without a host the dashboard Ingress would serve every host; allowed in namespace %s: %s (%s)", ns, allowed, ingressHostsSetting)), enablePath)}
	}
	return field.ErrorList{c.related(field.Forbidden(path, fmt.Sprintf(
		"host %q is not allowed in namespace %s; allowed: %s (%s)", host, ns, allowed, ingressHostsSetting)), enablePath)}
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
