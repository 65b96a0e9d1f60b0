package gcsredis

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ContainerEnv resolves a container's env as the kubelet would: literal values and Secret
// keys (other sources are left out).
func ContainerEnv(ctx context.Context, c client.Reader, namespace string, ctr corev1.Container) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			var s corev1.Secret
			if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &s); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			out[e.Name] = string(s.Data[ref.Key])
		}
	}
	return out, nil
}

// DialEnv connects as a Ray process with env does: RAY_REDIS_ADDRESS, REDIS_USERNAME and
// REDIS_PASSWORD.
func DialEnv(env map[string]string) (*Conn, error) {
	return Dial(env["RAY_REDIS_ADDRESS"], env["REDIS_USERNAME"], env["REDIS_PASSWORD"])
}
