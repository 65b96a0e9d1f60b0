package raypod

import (
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// IngressClassAnnotationKey is the (deprecated) Ingress class annotation. On a RayCluster it
// names the class of the dashboard Ingress, as under KubeRay: it becomes the Ingress's
// spec.ingressClassName and is not copied as an annotation (an Ingress must not have both).
const IngressClassAnnotationKey = "kubernetes.io/ingress.class"

// lastAppliedAnnotation is kubectl's record of the RayCluster manifest; copied to the Ingress
// it would only mislead kubectl about the Ingress.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CopiedAnnotationsKey lists, on the Ingress, the annotation keys raygate copied from the
// cluster, so one removed from the cluster is removed from the Ingress too while annotations
// others add to the Ingress are left alone.
const CopiedAnnotationsKey = rayv1.RaygateKeyPrefix + "copied-annotations"

// HeadIngressName is the dashboard Ingress of a cluster (KubeRay's name).
func HeadIngressName(cluster string) string { return cluster + "-head-ingress" }

// WantsIngress reports whether a cluster asks for a dashboard Ingress.
func WantsIngress(rc *rayv1.RayCluster) bool {
	return ptr.Deref(rc.Spec.HeadGroupSpec.EnableIngress, false)
}

// DefaultIngressPath is the dashboard path without ingressOptions.path: KubeRay's, a
// rewrite-style pattern for controllers such as ingress-nginx.
func DefaultIngressPath(cluster string) string { return "/" + cluster + "/(.*)" }

// IngressLabels are the labels of a cluster's dashboard Ingress: KubeRay's, which the
// operator's cache and ownership checks also select on.
func IngressLabels(cluster string) map[string]string {
	return map[string]string{
		rayv1.ClusterLabelKey:                   cluster,
		rayv1.IdentifierLabelKey:                rayspec.HeadIdentifier(cluster),
		rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
		rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
	}
}

// HeadIngress is the Ingress exposing the dashboard port of a (defaulted) cluster's head
// Service. kubernetes.io/ingress.class becomes ingressClassName. KubeRay copies every other
// cluster annotation, which lets a tenant configure a shared Ingress controller with the
// operator's rights (snippets, authentication pointing at other namespaces' Secrets); raygate
// copies only those the admin's policy lists (IngressPolicy.CopiesAnnotation), never unsafe
// ones, nor the operators' own bookkeeping (ray.io/ and raygate.ray.io/ keys, which a
// RayService rewrites on its clusters at every serve config change). ingressOptions set the
// rule's host, path and pathType and the TLS section; without them the rule matches any host
// on DefaultIngressPath, exactly. Whether the policy allows the result is
// IngressPolicy.Refusals.
func HeadIngress(rc *rayv1.RayCluster, policy IngressPolicy) *networkingv1.Ingress {
	annotations := map[string]string{}
	for k, v := range rc.Annotations {
		if policy.CopiesAnnotation(k) {
			annotations[k] = v
		}
	}
	annotations[CopiedAnnotationsKey] = strings.Join(slices.Sorted(maps.Keys(annotations)), ",")

	path, pathType := DefaultIngressPath(rc.Name), networkingv1.PathTypeExact
	var host string
	var tls []networkingv1.IngressTLS
	if o := rc.Spec.HeadGroupSpec.IngressOptions; o != nil {
		host = ptr.Deref(o.Host, "")
		if o.Path != nil && *o.Path != "" {
			path = *o.Path
		}
		if o.PathType != nil && *o.PathType != "" {
			pathType = networkingv1.PathType(*o.PathType)
		}
		for _, t := range o.TLS {
			tls = append(tls, *t.DeepCopy())
		}
	}

	ing := &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            HeadIngressName(rc.Name),
			Namespace:       rc.Namespace,
			Labels:          IngressLabels(rc.Name),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
		},
		Spec: networkingv1.IngressSpec{
			TLS: tls,
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     path,
						PathType: &pathType,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: HeadServiceName(rc),
							Port: networkingv1.ServiceBackendPort{Number: dashboardServicePort(rc)},
						}},
					}},
				}},
			}},
		},
	}
	if class, ok := rc.Annotations[IngressClassAnnotationKey]; ok && class != "" {
		ing.Spec.IngressClassName = ptr.To(class)
	}
	return ing
}

// CopiedAnnotations are the keys an Ingress records as copied from its cluster.
func CopiedAnnotations(ing *networkingv1.Ingress) []string {
	v := ing.Annotations[CopiedAnnotationsKey]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// operatorAnnotation reports whether an annotation key is KubeRay's or raygate's.
func operatorAnnotation(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	return found && (prefix == "ray.io" || strings.HasSuffix(prefix, ".ray.io"))
}

// dashboardServicePort is the head Service's port named "dashboard" (a headService override
// may renumber it), else the dashboard's default port.
func dashboardServicePort(rc *rayv1.RayCluster) int32 {
	for _, p := range HeadService(rc).Spec.Ports {
		if p.Name == rayspec.DashboardPortName {
			return p.Port
		}
	}
	return rayspec.DefaultDashboardPort
}
