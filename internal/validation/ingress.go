package validation

import (
	"fmt"
	"net"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
)

// WarnIngressOptionsUnused: ingressOptions without enableIngress: true create nothing.
const WarnIngressOptionsUnused = "%s has no effect: no Ingress is created unless headGroupSpec.enableIngress is true"

// headIngress checks the dashboard Ingress settings (create/update-only): what the API server
// would refuse when raygate creates the Ingress is refused here, at apply time.
func headIngress(head *rayv1.HeadGroupSpec, headPath *field.Path) (field.ErrorList, []string) {
	o := head.IngressOptions
	if o == nil {
		return nil, nil
	}
	optsPath := headPath.Child("ingressOptions")
	var warnings []string
	if !ptr.Deref(head.EnableIngress, false) {
		warnings = append(warnings, fmt.Sprintf(WarnIngressOptionsUnused, optsPath))
	}
	var errs field.ErrorList
	if o.Host != nil && *o.Host != "" {
		errs = append(errs, ingressHost(*o.Host, optsPath.Child("host"))...)
	}
	if o.Path != nil && *o.Path != "" {
		pathType := rayv1.IngressPathTypeExact
		if o.PathType != nil && *o.PathType != "" {
			pathType = *o.PathType
		}
		errs = append(errs, ingressPath(*o.Path, pathType, optsPath.Child("path"))...)
	}
	for i, t := range o.TLS {
		tlsPath := optsPath.Child("tls").Index(i)
		for j, h := range t.Hosts {
			errs = append(errs, ingressHost(h, tlsPath.Child("hosts").Index(j))...)
		}
		if t.SecretName != "" {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(t.SecretName) {
				errs = append(errs, field.Invalid(tlsPath.Child("secretName"), t.SecretName, msg))
			}
		}
	}
	return errs, warnings
}

// ingressHost: a DNS name, optionally with a leading "*." wildcard label; not an IP address.
func ingressHost(host string, path *field.Path) field.ErrorList {
	if net.ParseIP(host) != nil {
		return field.ErrorList{field.Invalid(path, host, "must be a DNS name, not an IP address")}
	}
	check := utilvalidation.IsDNS1123Subdomain
	if strings.HasPrefix(host, "*.") {
		check = utilvalidation.IsWildcardDNS1123Subdomain
	}
	var errs field.ErrorList
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(path, host, msg))
	}
	return errs
}

// invalidPathSequences and invalidPathSuffixes are refused in Exact and Prefix Ingress paths
// by the API server.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

// ingressPath: absolute; for Exact and Prefix, free of the sequences the API server refuses.
func ingressPath(p string, pathType rayv1.IngressPathType, path *field.Path) field.ErrorList {
	if !strings.HasPrefix(p, "/") {
		return field.ErrorList{field.Invalid(path, p, "must be an absolute path (start with '/')")}
	}
	if pathType == rayv1.IngressPathTypeImplementationSpecific {
		return nil
	}
	for _, s := range invalidPathSequences {
		if strings.Contains(p, s) {
			return field.ErrorList{field.Invalid(path, p, fmt.Sprintf("must not contain '%s' with pathType %s", s, pathType))}
		}
	}
	for _, s := range invalidPathSuffixes {
		if strings.HasSuffix(p, s) {
			return field.ErrorList{field.Invalid(path, p, fmt.Sprintf("must not end with '%s' with pathType %s", s, pathType))}
		}
	}
	return nil
}

// ingressClassAnnotation: the class a RayCluster's kubernetes.io/ingress.class annotation
// names becomes the Ingress's ingressClassName, which must be a DNS subdomain.
func ingressClassAnnotation(meta *metav1.ObjectMeta, spec *rayv1.RayClusterSpec) field.ErrorList {
	class, ok := meta.Annotations[raypod.IngressClassAnnotationKey]
	if !ok || !ptr.Deref(spec.HeadGroupSpec.EnableIngress, false) {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(raypod.IngressClassAnnotationKey)
	if class == "" {
		return field.ErrorList{field.Invalid(path, class, "must name an IngressClass (or remove the annotation to use the default class)")}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(class) {
		errs = append(errs, field.Invalid(path, class, msg))
	}
	return errs
}
