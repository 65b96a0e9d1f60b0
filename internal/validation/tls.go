package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// Messages of the spec.tlsOptions rules.
const (
	tlsToggleMessage = "mutual TLS cannot be turned on or off on an existing RayCluster: pods with and without TLS " +
		"cannot talk to each other, and running pods keep the setting they started with; delete and recreate the " +
		"cluster (a RayService replaces its cluster for you when rayClusterConfig changes)"
	tlsMountMessage  = "spec.tlsOptions mounts the cluster's certificate at " + rayspec.TLSMountPath + "; remove this mount (and the TLS setup it belongs to)"
	tlsVolumeMessage = "spec.tlsOptions adds a volume named " + raypod.TLSVolumeName + "; rename this one"
	tlsInitMessage   = "spec.tlsOptions adds an init container named " + raypod.WaitTLSInitContainer + "; rename this one"
)

// mtls checks spec.tlsOptions at admission: the feature gate, and pod templates that would
// clash with what mutual TLS adds to the pods (the kubelet would refuse such pods).
func (c *check) mtls(spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	if !c.admission() || spec.TLSOptions == nil {
		return nil, nil
	}
	p := path.Child("tlsOptions")
	if !rayspec.TLSEnabled(spec) {
		return nil, []string{fmt.Sprintf(WarnTLSDisabled, p)}
	}
	var errs field.ErrorList
	var warnings []string
	if gate := features.RayClusterMTLS; !c.gates.Enabled(gate) {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("the %s feature gate is off; %s", gate, GateHint(string(gate)))))
	}
	check := func(tmpl *corev1.PodTemplateSpec, tp *field.Path) {
		sp := tp.Child("spec")
		for i, v := range tmpl.Spec.Volumes {
			if v.Name == raypod.TLSVolumeName {
				errs = append(errs, field.Forbidden(sp.Child("volumes").Index(i).Child("name"), tlsVolumeMessage))
			}
		}
		for i, ic := range tmpl.Spec.InitContainers {
			if ic.Name == raypod.WaitTLSInitContainer {
				errs = append(errs, field.Forbidden(sp.Child("initContainers").Index(i).Child("name"), tlsInitMessage))
			}
		}
		if len(tmpl.Spec.Containers) == 0 {
			return
		}
		ray := &tmpl.Spec.Containers[rayv1.RayContainerIndex]
		cp := sp.Child("containers").Index(rayv1.RayContainerIndex)
		for i, m := range ray.VolumeMounts {
			if m.MountPath == rayspec.TLSMountPath || m.MountPath == rayspec.TLSMountPath+"/" {
				errs = append(errs, field.Forbidden(cp.Child("volumeMounts").Index(i).Child("mountPath"), tlsMountMessage))
			}
		}
		for i, e := range ray.Env {
			for _, own := range raypod.TLSEnv() {
				if e.Name == own.Name {
					warnings = append(warnings, fmt.Sprintf(WarnTLSEnvReplaced, cp.Child("env").Index(i), e.Name))
				}
			}
		}
	}
	check(&spec.HeadGroupSpec.Template, path.Child("headGroupSpec", "template"))
	for i := range spec.WorkerGroupSpecs {
		check(&spec.WorkerGroupSpecs[i].Template, path.Child("workerGroupSpecs").Index(i).Child("template"))
	}
	return errs, warnings
}

// tlsToggle refuses turning mutual TLS on or off on an existing RayCluster.
func tlsToggle(oldSpec, spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	if oldSpec == nil || rayspec.TLSEnabled(oldSpec) == rayspec.TLSEnabled(spec) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path.Child("tlsOptions"), tlsToggleMessage)}
}

// tlsNames checks that the cert-manager objects of a TLS cluster named cluster have names
// cert-manager can use: it labels each CertificateRequest with its Certificate's name.
func tlsNames(cluster string, spec *rayv1.RayClusterSpec, path *field.Path) field.ErrorList {
	if cluster == "" || !rayspec.TLSEnabled(spec) {
		return nil
	}
	for _, n := range rayspec.TLSCertificateNames(cluster) {
		if len(n) > rayspec.MaxLabelValueLength {
			return field.ErrorList{field.Invalid(path.Child("tlsOptions"), "enabled", fmt.Sprintf(
				"the cluster's Certificate %q would be %d characters, over the limit of %d that cert-manager needs (it labels requests with the name); use a name of at most %d characters",
				shorten(n), len(n), rayspec.MaxLabelValueLength, rayspec.MaxLabelValueLength-(len(n)-len(cluster))))}
		}
	}
	return nil
}

// CertManagerState is what the webhook found when it looked for cert-manager's API.
type CertManagerState int

const (
	// CertManagerUnknown: not looked up, or the lookup failed; nothing is refused.
	CertManagerUnknown CertManagerState = iota
	// CertManagerInstalled: Certificates and Issuers (cert-manager.io/v1) are served.
	CertManagerInstalled
	// CertManagerNotInstalled: the API server does not serve them.
	CertManagerNotInstalled
)

// TLSClusterPath returns the path of the cluster spec of a RayCluster, RayService or RayJob that
// asks for mutual TLS, so the webhook looks up cert-manager only for those.
func TLSClusterPath(obj any) (*field.Path, bool) {
	switch o := obj.(type) {
	case *rayv1.RayCluster:
		if o != nil && o.DeletionTimestamp == nil && rayspec.TLSEnabled(&o.Spec) {
			return specPath, true
		}
	case *rayv1.RayService:
		if o != nil && o.DeletionTimestamp == nil && rayspec.TLSEnabled(&o.Spec.RayClusterSpec) {
			return rayClusterConfigPath, true
		}
	case *rayv1.RayJob:
		if o != nil && o.DeletionTimestamp == nil && o.Spec.RayClusterSpec != nil && rayspec.TLSEnabled(o.Spec.RayClusterSpec) {
			return rayJobClusterPath, true
		}
	}
	return nil, false
}

// CertManagerErrors refuses a TLS cluster when cert-manager is not installed: its pods would
// wait forever for certificates nobody issues. oldSpec is the stored spec on update: an
// object that already asked for TLS is not refused for it (it can still be scaled or fixed).
func CertManagerErrors(oldSpec *rayv1.RayClusterSpec, path *field.Path, state CertManagerState) field.ErrorList {
	if state != CertManagerNotInstalled || (oldSpec != nil && rayspec.TLSEnabled(oldSpec)) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path.Child("tlsOptions"),
		"needs cert-manager, but its API (certificates.cert-manager.io and issuers.cert-manager.io, version v1) is not installed in this cluster; install cert-manager first")}
}
