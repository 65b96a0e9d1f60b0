package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/testenv/raysim"
)

// errNoValue is an environment variable whose source does not exist (yet).
var errNoValue = errors.New("no value")

// containerEnv resolves the container's environment as the kubelet would: literal values
// with $(VAR) references to earlier variables, Secret and ConfigMap keys, the pod's fields;
// envFrom first, env after it. A missing optional source is skipped; a missing required one
// is an error (the kubelet would not start the container).
func (s *Submitters) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		data, optional, err := s.sourceData(ctx, pod.Namespace, from)
		if err != nil && (!optional || !errors.Is(err, errNoValue)) {
			return nil, err
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		v, err := s.envValue(ctx, pod, e, env)
		if errors.Is(err, errNoValue) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", e.Name, err)
		}
		env[e.Name] = v
	}
	return env, nil
}

func (s *Submitters) sourceData(ctx context.Context, namespace string, from corev1.EnvFromSource) (map[string]string, bool, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm := &corev1.ConfigMap{}
		err := s.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: from.ConfigMapRef.Name}, cm)
		return cm.Data, ptr.Deref(from.ConfigMapRef.Optional, false), notFoundAsNoValue(err)
	case from.SecretRef != nil:
		sec := &corev1.Secret{}
		err := s.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: from.SecretRef.Name}, sec)
		data := map[string]string{}
		for k, v := range sec.Data {
			data[k] = string(v)
		}
		return data, ptr.Deref(from.SecretRef.Optional, false), notFoundAsNoValue(err)
	}
	return nil, true, nil
}

func (s *Submitters) envValue(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar, env map[string]string) (string, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return raysim.ExpandKubeletRefs(e.Value, env), nil
	case src.SecretKeyRef != nil:
		sec := &corev1.Secret{}
		if err := notFoundAsNoValue(s.api.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: src.SecretKeyRef.Name}, sec)); err != nil {
			return "", optionalErr(err, src.SecretKeyRef.Optional)
		}
		v, ok := sec.Data[src.SecretKeyRef.Key]
		if !ok {
			return "", optionalErr(errNoValue, src.SecretKeyRef.Optional)
		}
		return string(v), nil
	case src.ConfigMapKeyRef != nil:
		cm := &corev1.ConfigMap{}
		if err := notFoundAsNoValue(s.api.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: src.ConfigMapKeyRef.Name}, cm)); err != nil {
			return "", optionalErr(err, src.ConfigMapKeyRef.Optional)
		}
		v, ok := cm.Data[src.ConfigMapKeyRef.Key]
		if !ok {
			return "", optionalErr(errNoValue, src.ConfigMapKeyRef.Optional)
		}
		return v, nil
	case src.FieldRef != nil:
		return podField(pod, src.FieldRef.FieldPath), nil
	}
	return "", errNoValue
}

func notFoundAsNoValue(err error) error {
	if apierrors.IsNotFound(err) {
		return errNoValue
	}
	return err
}

// optionalErr passes errNoValue through for an optional source (the variable is then
// unset) and makes it an error for a required one.
func optionalErr(err error, optional *bool) error {
	if errors.Is(err, errNoValue) && !ptr.Deref(optional, false) {
		return errors.New("its source does not exist")
	}
	return err
}

// podField is the value of a downward-API field path.
func podField(pod *corev1.Pod, path string) string {
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	case "status.podIP":
		return pod.Status.PodIP
	case "status.hostIP":
		return pod.Status.HostIP
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			key = strings.TrimSuffix(key, "']")
			if prefix == "metadata.labels" {
				return pod.Labels[key]
			}
			return pod.Annotations[key]
		}
	}
	return ""
}
