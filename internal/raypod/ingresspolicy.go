package raypod

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// IngressPolicy is the admin's policy for the dashboard Ingress raygate creates, with its own
// rights, for a cluster with headGroupSpec.enableIngress: true (manager flags
// --allowed-ingress-classes, --allowed-ingress-hosts, --allowed-ingress-annotations). A tenant
// who may not create Ingresses must not get one through raygate that the admin did not allow.
// The zero value allows no Ingress at all. Admission refuses what it refuses; the controller
// checks the Ingress it built against it again and never creates or keeps one it refuses.
type IngressPolicy struct {
	// Classes are "<namespace>/<class>" entries; either side may be "*". A cluster without
	// a class annotation gets the cluster's default IngressClass, which only a "<namespace>/*"
	// entry allows. Empty: no dashboard Ingress anywhere.
	Classes []string
	// Hosts are "<namespace>/<domain>" entries; the namespace may be "*" and the domain may
	// contain {namespace}. A host is allowed when it is the domain or a name under it (a
	// "*." wildcard host too); the domain "*" allows any host, and a rule without a host
	// (which matches every host the Ingress controller serves).
	Hosts []string
	// Annotations are the cluster annotation keys copied to the Ingress: a key, or a prefix
	// ending in "*" (alb.ingress.kubernetes.io/*). Keys UnsafeIngressAnnotation names are
	// never copied, whatever the list says. Empty: none.
	Annotations []string
	// RouteInstead: the dashboard is exposed by an OpenShift Route (the API server serves
	// route.openshift.io and USE_INGRESS_ON_OPENSHIFT is off). A Route has no class and the
	// router picks its host, so only the namespace must be allowed (AllowsExposure) and the
	// annotations are filtered as for an Ingress.
	RouteInstead bool
}

// AllowsExposure says whether a dashboard of the namespace may be exposed at all: some
// --allowed-ingress-classes entry covers the namespace. It is the whole check for a Route.
func (p IngressPolicy) AllowsExposure(namespace string) bool { return len(p.ClassesFor(namespace)) > 0 }

// Any stands for every namespace, class or host in an IngressPolicy entry.
const Any = "*"

// NamespacePlaceholder in an --allowed-ingress-hosts domain is the cluster's namespace.
const NamespacePlaceholder = "{namespace}"

// unsafeAnnotationWords mark annotation names never copied to an Ingress: configuration
// snippets (ingress-nginx's *-snippet, HAProxy's *-config-snippet), authentication settings,
// which can point the controller at other namespaces' Secrets or at any URL (auth-url,
// auth-tls-secret), controller configuration, request mirroring to any address, and server
// aliases, which add hosts past the host policy.
var unsafeAnnotationWords = []string{"snippet", "auth", "config", "mirror", "alias"}

// ingressControllerDomains are annotation domains of Ingress controllers without "ingress"
// in their name.
var ingressControllerDomains = []string{"haproxy.org", "haproxy.com", "konghq.com", "projectcontour.io", "traefik.io", "getambassador.io"}

// UnsafeIngressAnnotation reports whether an annotation key is one raygate never copies to
// an Ingress: its name (the part after the last "/") mentions a snippet, authentication,
// configuration, mirroring or an alias, in any Ingress controller's spelling.
func UnsafeIngressAnnotation(key string) bool {
	name := strings.ToLower(key[strings.LastIndex(key, "/")+1:])
	return slices.ContainsFunc(unsafeAnnotationWords, func(w string) bool { return strings.Contains(name, w) })
}

// IngressControllerAnnotation reports whether an annotation key is meant for an Ingress
// controller: its domain mentions "ingress" (nginx.ingress.kubernetes.io,
// alb.ingress.kubernetes.io, ...) or is a known controller's.
func IngressControllerAnnotation(key string) bool {
	domain, _, found := strings.Cut(strings.ToLower(key), "/")
	return found && (strings.Contains(domain, "ingress") || slices.Contains(ingressControllerDomains, domain))
}

// ListsAnnotation reports whether an --allowed-ingress-annotations entry names a key.
func (p IngressPolicy) ListsAnnotation(key string) bool {
	return slices.ContainsFunc(p.Annotations, func(e string) bool {
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			return strings.HasPrefix(key, prefix)
		}
		return e == key
	})
}

// CopiesAnnotation reports whether a cluster annotation is copied to its dashboard Ingress:
// the admin lists it, it is not unsafe, and it is not the operators' own bookkeeping, the
// class annotation (it becomes ingressClassName) or kubectl's record of the manifest.
func (p IngressPolicy) CopiesAnnotation(key string) bool {
	return p.ListsAnnotation(key) && !UnsafeIngressAnnotation(key) && !operatorAnnotation(key) &&
		key != IngressClassAnnotationKey && key != lastAppliedAnnotation && key != CopiedAnnotationsKey
}

// Enabled reports whether the policy allows dashboard Ingresses anywhere.
func (p IngressPolicy) Enabled() bool { return len(p.Classes) > 0 }

// ClassesFor are the class entries that apply in a namespace ("*": any class, the default
// one included).
func (p IngressPolicy) ClassesFor(namespace string) []string { return entriesFor(p.Classes, namespace) }

// HostsFor are the host domains that apply in a namespace, {namespace} filled in.
func (p IngressPolicy) HostsFor(namespace string) []string {
	out := entriesFor(p.Hosts, namespace)
	for i, d := range out {
		out[i] = strings.ReplaceAll(d, NamespacePlaceholder, namespace)
	}
	return out
}

// AllowsClass reports whether an Ingress in a namespace may have a class; "" is the
// cluster's default class (no ingressClassName), which only "*" allows.
func (p IngressPolicy) AllowsClass(namespace, class string) bool {
	return slices.ContainsFunc(p.ClassesFor(namespace), func(c string) bool { return c == Any || (class != "" && c == class) })
}

// AllowsHost reports whether an Ingress in a namespace may serve a host; "" is a rule
// without a host, which serves every host and only "*" allows.
func (p IngressPolicy) AllowsHost(namespace, host string) bool {
	name := strings.TrimPrefix(host, "*.")
	return slices.ContainsFunc(p.HostsFor(namespace), func(d string) bool {
		return d == Any || (host != "" && (name == d || strings.HasSuffix(name, "."+d)))
	})
}

// Refusals says why the policy refuses an Ingress raygate built (none: it allows it): its
// class, and every host of its rules and TLS sections. The controller's last check before it
// creates or updates the Ingress.
func (p IngressPolicy) Refusals(ing *networkingv1.Ingress) []string {
	ns := ing.Namespace
	if !p.Enabled() {
		return []string{"dashboard Ingresses are off on this cluster (--allowed-ingress-classes is empty)"}
	}
	var out []string
	if class := ptr.Deref(ing.Spec.IngressClassName, ""); !p.AllowsClass(ns, class) {
		if class == "" {
			class = "the default class"
		}
		out = append(out, fmt.Sprintf("IngressClass %s is not allowed in namespace %s", class, ns))
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Host)
	}
	for _, t := range ing.Spec.TLS {
		hosts = append(hosts, t.Hosts...)
	}
	for _, h := range hosts {
		if !p.AllowsHost(ns, h) {
			if h == "" {
				h = "(any: a rule without a host)"
			}
			out = append(out, fmt.Sprintf("host %s is not allowed in namespace %s", h, ns))
		}
	}
	for _, k := range CopiedAnnotations(ing) {
		if UnsafeIngressAnnotation(k) {
			out = append(out, fmt.Sprintf("annotation %s is never copied to an Ingress", k))
		}
	}
	slices.Sort(out)
	return out
}

// entriesFor are the values of "<namespace>/<value>" entries whose namespace is ns or "*".
func entriesFor(entries []string, ns string) []string {
	var out []string
	for _, e := range entries {
		if n, v, ok := strings.Cut(e, "/"); ok && (n == Any || n == ns) {
			out = append(out, v)
		}
	}
	return out
}

// ValidIngressClassEntry says why an --allowed-ingress-classes entry is malformed ("": fine).
func ValidIngressClassEntry(e string) string {
	ns, class, ok := strings.Cut(e, "/")
	if !ok || ns == "" || class == "" {
		return fmt.Sprintf("%q must be <namespace>/<class>, either may be *", e)
	}
	if why := namespaceEntry(e, ns); why != "" {
		return why
	}
	if class != Any {
		if msgs := utilvalidation.IsDNS1123Subdomain(class); len(msgs) > 0 {
			return fmt.Sprintf("%q: class %s", e, strings.Join(msgs, "; "))
		}
	}
	return ""
}

// ValidIngressHostEntry says why an --allowed-ingress-hosts entry is malformed ("": fine).
func ValidIngressHostEntry(e string) string {
	ns, domain, ok := strings.Cut(e, "/")
	if !ok || ns == "" || domain == "" {
		return fmt.Sprintf("%q must be <namespace>/<domain>, the namespace may be * and the domain * or contain %s", e, NamespacePlaceholder)
	}
	if why := namespaceEntry(e, ns); why != "" {
		return why
	}
	if domain == Any {
		return ""
	}
	// {namespace} stands for a DNS label; check the domain with one in its place.
	if msgs := utilvalidation.IsDNS1123Subdomain(strings.ReplaceAll(domain, NamespacePlaceholder, "ns")); len(msgs) > 0 {
		return fmt.Sprintf("%q: domain %s (a bare domain allows itself and every name under it; no \"*.\")", e, strings.Join(msgs, "; "))
	}
	return ""
}

// ValidIngressAnnotationEntry says why an --allowed-ingress-annotations entry is malformed
// or unsafe ("": fine).
func ValidIngressAnnotationEntry(e string) string {
	key, prefix := strings.CutSuffix(e, "*")
	switch {
	case prefix && !strings.Contains(key, "/"):
		return fmt.Sprintf("%q: a prefix must include the annotation domain and \"/\" (e.g. alb.ingress.kubernetes.io/*)", e)
	case prefix:
		if msgs := utilvalidation.IsDNS1123Subdomain(strings.TrimSuffix(key[:strings.Index(key, "/")], ".")); len(msgs) > 0 {
			return fmt.Sprintf("%q: domain %s", e, strings.Join(msgs, "; "))
		}
	default:
		if msgs := utilvalidation.IsQualifiedName(key); len(msgs) > 0 {
			return fmt.Sprintf("%q: %s", e, strings.Join(msgs, "; "))
		}
		if UnsafeIngressAnnotation(key) {
			return fmt.Sprintf("%q is a snippet, authentication, configuration, mirroring or alias annotation, which raygate never copies", e)
		}
	}
	return ""
}

func namespaceEntry(e, ns string) string {
	if ns == Any {
		return ""
	}
	if msgs := utilvalidation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Sprintf("%q: namespace %s", e, strings.Join(msgs, "; "))
	}
	return ""
}
