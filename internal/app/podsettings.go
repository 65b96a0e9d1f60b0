package app

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
)

// PodSettings are what the options change in every pod raygate builds: the controller
// creates its pods, and admission checks them, with these.
func (o *Options) PodSettings() raypod.Settings {
	return raypod.Settings{
		ClusterDomain:            o.ClusterDomain,
		Defaults:                 o.PodDefaults,
		NoWaitGCSInitContainer:   o.NoWaitGCSInitContainer,
		NoProbes:                 o.NoProbes,
		LoginShell:               o.LoginShell,
		DeterministicHeadPodName: o.DeterministicHeadPodName,
		HeadClusterIPService:     o.HeadClusterIPService,
	}
}

// maxAnnotationBytes is the API server's limit on all annotations of an object.
const maxAnnotationBytes = 256 << 10

// reservedMetadataPrefixes are the label and annotation prefixes of raygate's and KubeRay's
// own keys: a default there would change how raygate treats the pods (e.g.
// ray.io/overwrite-container-cmd keeps raygate from writing the Ray command).
var reservedMetadataPrefixes = []string{"ray.io/", "raygate.ray.io/"}

// validatePodDefaults checks the admin's pod defaults (--config): sidecars that could not
// join a pod (no name or image, a name raygate's containers or another sidecar use, an image
// from a registry --allowed-image-registries does not allow), variables without a valid name
// or twice, labels and annotations that are not valid or are raygate's own.
func validatePodDefaults(d raypod.PodDefaults, allowedRegistries []string) []string {
	var errs []string
	for _, side := range []struct {
		field string
		list  []corev1.Container
	}{{"headSidecarContainers", d.HeadSidecars}, {"workerSidecarContainers", d.WorkerSidecars}} {
		seen := map[string]bool{}
		for i, c := range side.list {
			at := fmt.Sprintf("--config %s[%d]", side.field, i)
			switch msgs := utilvalidation.IsDNS1123Label(c.Name); {
			case len(msgs) > 0:
				errs = append(errs, fmt.Sprintf("%s: name %q: %s", at, c.Name, strings.Join(msgs, "; ")))
			case slices.Contains(raypod.ContainerNames, c.Name):
				errs = append(errs, fmt.Sprintf("%s: name %q is a container raygate adds to Ray pods", at, c.Name))
			case seen[c.Name]:
				errs = append(errs, fmt.Sprintf("%s: name %q is taken by another sidecar", at, c.Name))
			}
			seen[c.Name] = true
			if c.Image == "" {
				errs = append(errs, at+": no image")
			} else if reg := validation.ImageRegistry(c.Image); len(allowedRegistries) > 0 && !slices.Contains(allowedRegistries, reg) {
				errs = append(errs, fmt.Sprintf("%s: image %q is from registry %s, which --allowed-image-registries does not allow (%s)", at, c.Image, reg, strings.Join(allowedRegistries, ", ")))
			}
		}
	}
	seen := map[string]bool{}
	for i, e := range d.Env {
		at := fmt.Sprintf("--config defaultContainerEnvs[%d]", i)
		if msgs := utilvalidation.IsEnvVarName(e.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("%s: name %q: %s", at, e.Name, strings.Join(msgs, "; ")))
		} else if seen[e.Name] {
			errs = append(errs, fmt.Sprintf("%s: %s is set twice", at, e.Name))
		}
		seen[e.Name] = true
	}
	errs = append(errs, validateDefaultMeta("defaultPodLabels", d.Labels, true)...)
	errs = append(errs, validateDefaultMeta("defaultPodAnnotations", d.Annotations, false)...)
	return errs
}

// validateDefaultMeta checks default labels (values too) or annotations, in key order.
func validateDefaultMeta(field string, m map[string]string, labels bool) []string {
	var errs []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	size := 0
	for _, k := range keys {
		at := fmt.Sprintf("--config %s[%q]", field, k)
		if msgs := utilvalidation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("%s: %s", at, strings.Join(msgs, "; ")))
			continue
		}
		if slices.ContainsFunc(reservedMetadataPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			errs = append(errs, fmt.Sprintf("%s: keys under ray.io/ and raygate.ray.io/ are raygate's and KubeRay's own, set on each pod from its RayCluster", at))
			continue
		}
		if labels {
			if msgs := utilvalidation.IsValidLabelValue(m[k]); len(msgs) > 0 {
				errs = append(errs, fmt.Sprintf("%s: value %q: %s", at, m[k], strings.Join(msgs, "; ")))
			}
		}
		size += len(k) + len(m[k])
	}
	if !labels && size > maxAnnotationBytes/2 {
		errs = append(errs, fmt.Sprintf("--config %s: %d bytes; at most %d, so that the pods' own annotations still fit", field, size, maxAnnotationBytes/2))
	}
	return errs
}
