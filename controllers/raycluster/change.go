package raycluster

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/owned/ownerref"
)

// A pass's phases for the objects a cluster owns besides its pods (the head and optional
// Services, the autoscaler's RBAC, the Ingress, the NetworkPolicies, the cert-manager
// objects) each observe the objects, decide one change per object with a pure function of
// what they read (ownerref.Decide, through decideService, decideIngress,
// planNetworkPolicies, decideTLSObject, ensure) and act: applyChange carries a change out
// (package owned), reports it in an event and notes a conflict.

// ownedObject is a pointer to an API object a cluster owns (nil: none).
type ownedObject interface {
	comparable
	client.Object
}

// change is one decision about one owned object.
type change struct {
	op ownerref.Op
	// object is what to create or write, or what exists (delete, recreate, report).
	object client.Object
	// about is the object the events relate to (nil: object).
	about client.Object
	// why says why the object is deleted or recreated (recreate: how it changes).
	why string
}

// changeOf is the change ownerref decided, for applyChange.
func changeOf[T ownedObject](c ownerref.Change[T]) change {
	if c.Op == ownerref.Keep {
		return change{}
	}
	return change{op: c.Op, object: c.Object}
}

// ownedKind says how events and errors name one kind of owned object.
type ownedKind struct {
	// noun names the object in events ("serve service", "ingress"); errors name it by noun,
	// and by name too when named. purpose follows the name in events of a create or an
	// update (" for the autoscaler").
	noun, purpose string
	named         bool
	// Event reasons: created, updated and deleted; a failed create; a failed update or
	// delete.
	created, updated, deleted  string
	createFailed, changeFailed string
	// quietCreate: a successful create is reported by the caller, not here.
	quietCreate bool
}

// of is k naming its objects by kind.
func (k ownedKind) of(kind string) ownedKind {
	k.noun = kind
	return k
}

func (k ownedKind) inError(name string) string {
	if k.named {
		return k.noun + " " + name
	}
	return k.noun
}

// applyChange carries out a change and reports it. A foreign object, the change's or one a
// create found under the name, is noted as a conflict. done says the change was written.
func (r *Reconciler) applyChange(ctx context.Context, p *pass, k ownedKind, c change) (done bool, err error) {
	if c.op == ownerref.Keep {
		return false, nil
	}
	name, about := c.object.GetName(), c.about
	if about == nil {
		about = c.object
	}
	res, err := r.objects(p).Apply(ctx, ownerref.Change[client.Object]{Op: c.op, Object: c.object})
	if res.Conflict != nil {
		p.conflicts = append(p.conflicts, *res.Conflict)
	}
	if err != nil {
		switch c.op {
		case ownerref.Create:
			p.warnAbout(about, k.createFailed, actionCreate, "Failed to create %s %s%s: %v", k.noun, name, k.purpose, err)
			return false, fmt.Errorf("creating %s: %w", k.inError(name), err)
		case ownerref.Update:
			p.warnAbout(about, k.changeFailed, actionUpdate, "Failed to update %s %s: %v", k.noun, name, err)
			return false, fmt.Errorf("updating %s: %w", k.inError(name), err)
		}
		p.warnAbout(about, k.changeFailed, actionDelete, "Failed to delete %s %s: %v", k.noun, name, err)
		return false, fmt.Errorf("deleting %s: %w", k.inError(name), err)
	}
	if !res.Done {
		return false, nil
	}
	switch c.op {
	case ownerref.Create:
		if !k.quietCreate {
			p.normalAbout(about, k.created, actionCreate, "Created %s %s%s", k.noun, name, k.purpose)
		}
	case ownerref.Update:
		p.normalAbout(about, k.updated, actionUpdate, "Updated %s %s%s", k.noun, name, k.purpose)
	case ownerref.Recreate:
		how := ""
		if c.why != "" {
			how = " " + c.why
		}
		p.normalAbout(about, k.deleted, actionDelete, "Deleted %s %s to recreate it%s", k.noun, name, how)
	case ownerref.Delete:
		p.normalAbout(about, k.deleted, actionDelete, "Deleted %s %s: %s", k.noun, name, c.why)
	}
	return true, nil
}
