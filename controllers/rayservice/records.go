package rayservice

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/owned/ownerref"
)

// A cluster's serve config record is a ConfigMap the cluster owns, `<cluster>-serve-configs`,
// holding by hash the serve configs (their serveConfigV2 text, at most the 256 KiB the spec
// allows) the cluster was given: the one being submitted and those it ran or runs, at most
// three, well within a ConfigMap's 1 MiB. The cluster's annotations record only the hash of
// the config its dashboard accepted. The record is written before a config is submitted and
// read, from the API server (ConfigMaps are never cached or watched), only when a config no
// longer in the spec must be sent again: the active cluster's during an upgrade, after its
// head restarted or its target capacity changes.

func recordKey(rc *rayv1.RayCluster) types.NamespacedName {
	return types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name + serveConfigRecordSuffix}
}

// recordOwner is what a record's controller reference must name.
func recordOwner(rc *rayv1.RayCluster) metav1.Object {
	return &metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}}
}

// observeRecord reads a cluster's record when its name was found taken, so the plan can
// report a foreign one.
func (r *Reconciler) observeRecord(ctx context.Context, svc *rayv1.RayService, rc *rayv1.RayCluster, obs *plan.Observed) error {
	objects := r.objects(svc).Uncached()
	cm, key := &corev1.ConfigMap{}, recordKey(rc)
	if !objects.Remembered(cm, key) {
		return nil
	}
	found, err := objects.Get(ctx, key, cm)
	switch {
	case err != nil || !found:
		return err
	case ownerref.ControlledBy(cm, rc):
		objects.Settled(cm, key)
	default:
		obs.ForeignRecords[rc.Name] = objects.ConflictOf(cm, recordOwner(rc)).String()
	}
	return nil
}

// writeRecord keeps cfg in the cluster's record, with the configs in keep, before cfg is
// submitted. It writes only when the record lacks cfg or holds others.
func (r *Reconciler) writeRecord(ctx context.Context, objects owned.Client, rc *rayv1.RayCluster, cfg *plan.ServeConfig, keep []string) error {
	objects = objects.Uncached()
	cm, key := &corev1.ConfigMap{}, recordKey(rc)
	found, err := objects.Get(ctx, key, cm)
	if err != nil {
		return err
	}
	if !found {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: key.Name, Namespace: key.Namespace,
				Labels: map[string]string{
					rayv1.ClusterLabelKey:              rc.Name,
					rayv1.OriginatedFromCRNameLabelKey: rc.Labels[rayv1.OriginatedFromCRNameLabelKey],
					rayv1.OriginatedFromCRDLabelKey:    plan.RayServiceKind,
					rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
				},
				OwnerReferences: recordOwner(rc).GetOwnerReferences(),
			},
			Data: map[string]string{cfg.Hash(): cfg.Source()},
		}
		res, err := objects.Create(ctx, cm)
		switch {
		case err != nil:
			return fmt.Errorf("recording the serve config of %s in ConfigMap %s: %w", rc.Name, key.Name, err)
		case res.Conflict != nil:
			return fmt.Errorf("%s: the serve config is not submitted", res.Conflict)
		case res.Existing == nil:
			return nil
		}
		cm = res.Existing.(*corev1.ConfigMap) // the cluster's, made meanwhile: brought up to date
	}
	if !ownerref.ControlledBy(cm, rc) {
		objects.Remember(cm)
		return fmt.Errorf("ConfigMap %s is not controlled by RayCluster %s: the serve config is not submitted", key.Name, rc.Name)
	}
	data := map[string]string{cfg.Hash(): cfg.Source()}
	for _, h := range keep {
		if v, ok := cm.Data[h]; ok && h != "" {
			data[h] = v
		}
	}
	if maps.Equal(data, cm.Data) && len(cm.BinaryData) == 0 {
		return nil
	}
	cm.Data, cm.BinaryData = data, nil
	if err := objects.Update(ctx, cm); err != nil {
		return fmt.Errorf("recording the serve config of %s in ConfigMap %s: %w", rc.Name, key.Name, err)
	}
	return nil
}

// readRecord is the config recorded for hash. missing, when set, says why there is none to
// send (the record is gone, not the cluster's, or does not hold that config); err is a
// failure to read.
func (r *Reconciler) readRecord(ctx context.Context, objects owned.Client, rc *rayv1.RayCluster, hash string) (cfg *plan.ServeConfig, missing string, err error) {
	objects = objects.Uncached()
	cm, key := &corev1.ConfigMap{}, recordKey(rc)
	found, err := objects.Get(ctx, key, cm)
	switch {
	case err != nil:
		return nil, "", err
	case !found:
		return nil, fmt.Sprintf("the serve config %s that %s runs is not recorded (ConfigMap %s is missing); it keeps what it runs", hash, rc.Name, key.Name), nil
	case !ownerref.ControlledBy(cm, rc):
		objects.Remember(cm)
		return nil, fmt.Sprintf("ConfigMap %s is not controlled by RayCluster %s; %s keeps what it runs", key.Name, rc.Name, rc.Name), nil
	}
	text, ok := cm.Data[hash]
	if !ok {
		return nil, fmt.Sprintf("ConfigMap %s does not hold the serve config %s that %s runs; it keeps what it runs", key.Name, hash, rc.Name), nil
	}
	cfg, perr := plan.ParseServeConfig(text)
	if perr != nil || cfg.Hash() != hash {
		return nil, fmt.Sprintf("the serve config %s recorded in ConfigMap %s was changed; %s keeps what it runs", hash, key.Name, rc.Name), nil
	}
	return cfg, "", nil
}
