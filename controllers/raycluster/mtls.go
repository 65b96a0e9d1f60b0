package raycluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
)

// cert-manager objects are only created and kept in shape; the garbage collector deletes
// them with their cluster (controller references), so raygate needs no delete right. It
// never reads or writes the Secrets cert-manager issues: the pods mount them by name.
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;certificates,verbs=get;list;watch;create;update

// Events about a TLS cluster's cert-manager objects (KubeRay's reasons where it has one).
const (
	EventCreatedMTLSResource = "CreatedMTLSResource"
	EventUpdatedMTLSResource = "MTLSCertificatesUpdated"
	EventFailedMTLS          = "MTLSFailedToReconcile"
	EventMTLSExpiringSoon    = "MTLSCertificateExpiringSoon"
)

// errCertManagerMissing: the cluster asks for mTLS but the API server serves no
// cert-manager; no pods are created (they would wait forever for their certificates).
var errCertManagerMissing = errors.New("spec.tlsOptions needs cert-manager, whose Certificate and Issuer APIs (cert-manager.io/v1) " +
	"the API server did not serve when raygate started; install cert-manager and restart raygate")

// errTLSObjectTaken stops the pass before pods are created: they would mount a Secret
// written for a Certificate the cluster does not control.
var errTLSObjectTaken = fmt.Errorf("a cert-manager object's name is taken by an object the cluster does not control: %w", errStopPass)

// reconcileMTLS creates the cluster's cert-manager PKI (raypod.TLSObjects) and keeps each
// leaf Certificate naming the IPs of its running pods, so cert-manager reissues it when pods
// come and go. It runs before pods are created; a new pod's init container waits until its
// certificate names its IP (raypod.addMTLS).
func (r *Reconciler) reconcileMTLS(ctx context.Context, p *pass) error {
	if !rayspec.TLSEnabled(&p.cluster.Spec) {
		return nil
	}
	if !r.Capabilities.CertManager {
		p.warn(EventFailedMTLS, actionCreate, "%v", errCertManagerMissing)
		return errCertManagerMissing
	}
	headIPs, workerIPs := podIPs(p.pods)
	objects := r.objects(p).ReadingFrom(r.certReader())
	for _, desired := range raypod.TLSObjects(p.cluster, headIPs, workerIPs, r.Pods.ClusterDomain) {
		blank := &unstructured.Unstructured{}
		blank.SetGroupVersionKind(desired.GroupVersionKind())
		existing, err := owned.Read(ctx, objects, key(desired), blank)
		if err != nil {
			return err
		}
		c := decideTLSObject(desired, existing, existing != nil && ownerref.ControlledBy(existing, p.object))
		n := len(p.conflicts)
		if _, err := r.applyChange(ctx, p, tlsKind(desired.GetKind()), c); err != nil {
			return err
		}
		if len(p.conflicts) > n {
			return errTLSObjectTaken
		}
	}
	due, next := tlsRestartsDue(p.pods, r.Now())
	for _, d := range due {
		p.warn(EventMTLSExpiringSoon, actionSkip, "Pod %s has run since %s and Ray does not reload certificates: its certificate expires "+
			"by %s; delete the pod (raygate recreates it with a current certificate) or replace the cluster",
			d.name, d.started.UTC().Format(time.RFC3339), d.expires.UTC().Format(time.RFC3339))
	}
	p.recheckAfter(next)
	return nil
}

// restartDue is a pod whose certificate expires soon.
type restartDue struct {
	name             string
	started, expires time.Time
}

// tlsRestartsDue finds the pods that must be restarted for their certificate. Ray reads its
// certificate once, at start. A pod's certificate was issued after the pod got its IP (it
// names that IP, and the controller adds an IP only once the pod has it), so it is valid until
// at least the pod's start plus LeafDuration. A pod is due when less than LeafRenewBefore of
// that is left; next is when the next pod becomes due (0: none).
func tlsRestartsDue(pods []corev1.Pod, now time.Time) (due []restartDue, next time.Duration) {
	for i := range pods {
		pod := &pods[i]
		if pod.Status.StartTime == nil || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		started := pod.Status.StartTime.Time
		expires := started.Add(raypod.LeafDuration)
		dueAt := expires.Add(-raypod.LeafRenewBefore)
		if !now.Before(dueAt) {
			due = append(due, restartDue{name: pod.Name, started: started, expires: expires})
		} else if wait := dueAt.Sub(now); next == 0 || wait < next {
			next = wait
		}
	}
	return due, next
}

// tlsKind names a cert-manager object in events and errors.
func tlsKind(kind string) ownedKind {
	return ownedKind{noun: kind, named: true,
		created: EventCreatedMTLSResource, updated: EventUpdatedMTLSResource,
		createFailed: EventFailedMTLS, changeFailed: EventFailedMTLS}
}

// decideTLSObject is the change to one cert-manager object: created when missing, reported
// when the cluster does not control it, its spec and labels put back when they differ. Its
// events are about the desired object.
func decideTLSObject(desired, existing *unstructured.Unstructured, controlled bool) change {
	c := changeOf(ownerref.Decide(desired, existing, controlled, mergeTLSObject))
	if c.op == ownerref.Update {
		c.about = desired
	}
	return c
}

// mergeTLSObject is the existing object with raygate's spec and labels, or nil when it has
// them (it is never recreated).
func mergeTLSObject(existing, desired *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	if raypod.TLSSpecEqual(existing, desired) && ownerref.HasEntries(existing.GetLabels(), desired.GetLabels()) {
		return nil, false
	}
	return raypod.WithTLSSpec(existing, desired), false
}

// certReader reads cert-manager objects: the manager's cache (which holds the ones raygate
// labelled), else the client.
func (r *Reconciler) certReader() client.Reader {
	if r.CertReader != nil {
		return r.CertReader
	}
	return r.Client
}

// podIPs are the IPs of the cluster's head and worker pods that hold one and are not on
// their way out (a deleted pod's IP may soon belong to another pod).
func podIPs(pods []corev1.Pod) (head, workers []string) {
	for i := range pods {
		pod := &pods[i]
		if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
			head = append(head, pod.Status.PodIP)
		} else {
			workers = append(workers, pod.Status.PodIP)
		}
	}
	return head, workers
}
