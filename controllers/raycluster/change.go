package raycluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A pass's phases for the objects a cluster owns besides its pods (the optional Services,
// the Ingress, the NetworkPolicies, the cert-manager objects) each observe the objects, decide
// one change per object with a pure function of what they read (decideService,
// decideIngress, planNetworkPolicies, decideTLSObject) and act: applyChange carries a change
// out, reports it in an event and notes a conflict.

// changeOp is what a pass does to one owned object.
type changeOp int

const (
	changeKeep     changeOp = iota // nothing to do
	changeCreate                   // create object
	changeUpdate                   // write object: the existing one with raygate's fields
	changeRecreate                 // delete object; the next pass creates it again
	changeDelete                   // delete object: the cluster no longer asks for it
	changeConflict                 // object has the wanted name but another controller: report it
)

// change is one decision about one owned object.
type change struct {
	op changeOp
	// object is what to create or write, or what exists (delete, recreate, conflict).
	object client.Object
	// about is the object the events relate to (nil: object).
	about client.Object
	// why says why the object is deleted.
	why string
}

// ownedKind says how events and errors name one kind of owned object.
type ownedKind struct {
	// kind is the API kind, as conflicts name it.
	kind string
	// noun names the object in events ("serve service", "ingress"); errors name it by noun,
	// and by name too when named.
	noun  string
	named bool
	// Event reasons: created, updated and deleted; a failed create; a failed update or
	// delete.
	created, updated, deleted  string
	createFailed, changeFailed string
}

func (k ownedKind) inError(name string) string {
	if k.named {
		return k.noun + " " + name
	}
	return k.noun
}

// applyChange carries out a change. A create that finds the name taken reads the object
// into blank (an empty object of the kind) and reports it if the cluster does not control it.
func (r *Reconciler) applyChange(ctx context.Context, p *pass, k ownedKind, c change, blank client.Object) error {
	if c.op == changeKeep {
		return nil
	}
	name, about := c.object.GetName(), c.about
	if about == nil {
		about = c.object
	}
	switch c.op {
	case changeCreate:
		err := r.Create(ctx, c.object)
		switch {
		case apierrors.IsAlreadyExists(err):
			return r.reportTaken(ctx, p, k.kind, c.object, blank)
		case err != nil:
			p.warnAbout(about, k.createFailed, actionCreate, "Failed to create %s %s: %v", k.noun, name, err)
			return fmt.Errorf("creating %s: %w", k.inError(name), err)
		}
		p.normalAbout(about, k.created, actionCreate, "Created %s %s", k.noun, name)
	case changeUpdate:
		if err := r.Update(ctx, c.object); err != nil {
			p.warnAbout(about, k.changeFailed, actionUpdate, "Failed to update %s %s: %v", k.noun, name, err)
			return fmt.Errorf("updating %s: %w", k.inError(name), err)
		}
		p.normalAbout(about, k.updated, actionUpdate, "Updated %s %s", k.noun, name)
	case changeRecreate, changeDelete:
		uid := c.object.GetUID()
		if err := r.Delete(ctx, c.object, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			p.warnAbout(about, k.changeFailed, actionDelete, "Failed to delete %s %s: %v", k.noun, name, err)
			return fmt.Errorf("deleting %s: %w", k.inError(name), err)
		}
		p.normalAbout(about, k.deleted, actionDelete, "Deleted %s %s: %s", k.noun, name, c.why)
	case changeConflict:
		if conf, foreign := conflictOf(p, k.kind, c.object); foreign {
			p.conflicts = append(p.conflicts, conf)
		}
	}
	return nil
}
