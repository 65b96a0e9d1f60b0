package raycluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// The claim of a rocksdb cluster is created before the head pod, controlled by the cluster
// unless Retain; one controlled by another object stops the pass before any pod.
func TestReconcileGCSStorage(t *testing.T) {
	other := &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: ptr.To(true)}
	cases := map[string]struct {
		policy    *rayv1.GCSStorageDeletionPolicy
		claimName string
		existing  *metav1.OwnerReference // nil: no claim; an empty reference: a claim without controller
		wantOwned bool
		wantPods  bool
		wantPVCs  int
	}{
		"created, owned, then the pods":            {wantOwned: true, wantPods: true, wantPVCs: 1},
		"Retain: created without an owner":         {policy: ptr.To(rayv1.RetainGCSStorageDeletionPolicy), wantPods: true, wantPVCs: 1},
		"a claim nobody controls is used":          {existing: &metav1.OwnerReference{}, wantPods: true, wantPVCs: 1},
		"a claim another object controls: no pods": {existing: other, wantPVCs: 1},
		"the user's claim: none created":           {claimName: "mine", wantPods: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rc := builders.RayCluster("db", "ns").Obj()
			rc.UID = "db-uid"
			rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB,
				Storage: &rayv1.GcsEmbeddedStorage{DeletionPolicy: tc.policy, ClaimName: tc.claimName}}
			objs := []client.Object{rc}
			if tc.existing != nil {
				pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-gcs-pvc", Namespace: "ns"}}
				if tc.existing.UID != "" {
					pvc.OwnerReferences = []metav1.OwnerReference{*tc.existing}
				}
				objs = append(objs, pvc)
			}
			store := newStore(objs...)
			r := &raycluster.Reconciler{Client: store,
				Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(),
				Config: raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{}, Now: time.Now},
			}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "db"}}); err != nil {
				t.Fatal(err)
			}
			var pvcs corev1.PersistentVolumeClaimList
			if err := store.List(ctx, &pvcs); err != nil {
				t.Fatal(err)
			}
			if len(pvcs.Items) != tc.wantPVCs {
				t.Fatalf("%d claims, want %d", len(pvcs.Items), tc.wantPVCs)
			}
			if tc.wantPVCs == 1 && tc.existing == nil {
				got := &pvcs.Items[0]
				if owned := metav1.IsControlledBy(got, rc); owned != tc.wantOwned {
					t.Errorf("controlled by the cluster = %v, want %v (%v)", owned, tc.wantOwned, got.OwnerReferences)
				}
			}
			var pods corev1.PodList
			if err := store.List(ctx, &pods); err != nil {
				t.Fatal(err)
			}
			if (len(pods.Items) > 0) != tc.wantPods {
				t.Fatalf("%d pods, want pods: %v", len(pods.Items), tc.wantPods)
			}
			st := &rayv1.RayCluster{}
			if err := store.Get(ctx, client.ObjectKeyFromObject(rc), st); err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(st.Status.Conditions, "OwnershipConflict"); !tc.wantPods &&
				(c == nil || !strings.HasPrefix(c.Message, "PersistentVolumeClaim db-gcs-pvc exists and is not controlled by this RayCluster (it is controlled by ConfigMap x)")) {
				t.Errorf("a conflicting claim is not reported in the status: %+v", st.Status.Conditions)
			}
			for _, pod := range pods.Items {
				if pod.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) {
					continue
				}
				want := "db-gcs-pvc"
				if tc.claimName != "" {
					want = tc.claimName
				}
				found := false
				for _, v := range pod.Spec.Volumes {
					found = found || (v.Name == raypod.GCSStorageVolume && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == want)
				}
				if !found {
					t.Errorf("the head does not mount %s: %v", want, pod.Spec.Volumes)
				}
			}
		})
	}
}
