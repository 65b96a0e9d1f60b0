package raycluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
)

// raygate creates the token Secret of a cluster with authOptions.mode token and no
// secretName, and reads it back by name; it never lists, watches, caches, updates or deletes
// Secrets (the garbage collector deletes the generated one with its cluster). Getting and
// creating Secrets is not in the generated ClusterRole: it comes with the operator's
// --token-authentication (Helm value tokenAuthentication.enabled), and without it no Secret
// is touched (tokenAuthRefused). A cluster that delegates token checks to Kubernetes
// (enableK8sTokenAuth) has no Secret at all, so it needs neither.

// Events about the token Secret. They never carry the token.
const (
	EventCreatedAuthSecret = "CreatedAuthSecret" // #nosec G101 -- an event reason, not a credential
	EventFailedAuthSecret  = "FailedToCreateAuthSecret"
)

// authTokenBytes is how much randomness a generated token carries (KubeRay's 32 bytes,
// base64-encoded).
const authTokenBytes = 32

// authSecret is the token Secret raygate generates for a cluster: owned by it (deleted with
// it), labelled for raygate's cache, immutable so the token is never changed in place. The
// token is random; nothing else about it is logged or reported.
func authSecret(rc *rayv1.RayCluster, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: ownedMeta(rc, rayspec.GeneratedAuthSecretName(rc.Name)),
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr.To(true),
		Data:       map[string][]byte{rayspec.AuthTokenKey: []byte(token)},
	}
}

// tokenAuthRefused: a stored cluster with mode token (admitted before the option was turned
// off, or while the webhook was off) on a raygate without --token-authentication is reported
// as invalid, so no Secret is read or created and no pod is created for it. The delegated
// mode reads no Secret, so it is not refused.
func tokenAuthRefused(spec *rayv1.RayClusterSpec, tokenAuthentication bool) field.ErrorList {
	if tokenAuthentication || !rayspec.AuthEnabled(spec) || rayspec.K8sTokenAuth(spec) {
		return nil
	}
	return field.ErrorList{validation.TokenAuthenticationOff(field.NewPath("spec", "authOptions", "mode"))}
}

func newAuthToken() (string, error) {
	b := make([]byte, authTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// reconcileAuthSecret creates the cluster's token Secret once. Secrets are not cached, so
// this is one GET per pass of a token-authenticated cluster, and no write once it exists. An existing one is never
// changed: rotating means deleting it (raygate then creates a new token, which pods created
// from then on get). A Secret of that name the cluster does not control is reported as an
// ownership conflict and left alone; the pods would not start without their Secret, so none
// is created meanwhile.
func (r *Reconciler) reconcileAuthSecret(ctx context.Context, p *pass) error {
	spec := &p.cluster.Spec
	if !rayspec.AuthEnabled(spec) || rayspec.K8sTokenAuth(spec) || rayspec.UserAuthSecret(spec) != "" {
		return nil
	}
	name := rayspec.GeneratedAuthSecretName(p.cluster.Name)
	existing, err := owned.Read(ctx, r.objects(p).Uncached(), types.NamespacedName{Namespace: p.cluster.Namespace, Name: name}, &corev1.Secret{})
	if err != nil {
		return err
	}
	switch decideAuthSecret(existing, existing != nil && ownerref.ControlledBy(existing, p.object)) {
	case ownerref.Keep:
		return nil
	case ownerref.Report:
		c, _ := conflictOf(p, "Secret", existing)
		p.conflicts = append(p.conflicts, c)
		return errAuthSecretTaken
	}
	return r.createAuthSecret(ctx, p, name)
}

// decideAuthSecret: a token Secret is created when missing, kept as it is once it exists,
// and reported when the cluster does not control it.
func decideAuthSecret(existing *corev1.Secret, controlled bool) ownerref.Op {
	switch {
	case existing == nil:
		return ownerref.Create
	case !controlled:
		return ownerref.Report
	}
	return ownerref.Keep
}

// createAuthSecret creates the token Secret called name with a new random token.
func (r *Reconciler) createAuthSecret(ctx context.Context, p *pass, name string) error {
	token, err := newAuthToken()
	if err != nil {
		return err
	}
	desired := authSecret(p.object, token)
	switch res, err := r.objects(p).Uncached().Create(ctx, desired); {
	case err != nil:
		p.warn(EventFailedAuthSecret, actionCreate, "Failed to create Secret %s for the Ray auth token: %v", name, err)
		return fmt.Errorf("creating Secret %s: %w", name, err)
	case res.Conflict != nil:
		p.conflicts = append(p.conflicts, *res.Conflict)
		return errAuthSecretTaken
	case res.Existing != nil:
		return nil // the cluster's, made meanwhile
	}
	p.normal(EventCreatedAuthSecret, actionCreate, "Created Secret %s with a new random Ray auth token (key %s)", name, rayspec.AuthTokenKey)
	return nil
}

// errStopPass ends a pass's apply phases without an error: what stopped it is already
// recorded (an ownership conflict, shown in the status and rechecked after conflictRecheck).
var errStopPass = errors.New("stop the pass")

// errAuthSecretTaken stops the pass before pods are created: they would read a token from a
// Secret the cluster does not control.
var errAuthSecretTaken = fmt.Errorf("the token Secret's name is taken by an object the cluster does not control: %w", errStopPass)
