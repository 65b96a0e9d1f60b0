// Package owned is the one way raygate's controllers create, update and delete the objects
// they own (Services, Gateways, routes, RBAC, Ingresses, NetworkPolicies, cert-manager
// objects, Secrets, ConfigMaps, claims).
//
// Every object raygate creates carries a controller reference to its owner, and raygate
// updates or deletes only an object its owner controls (by UID), deleting with a UID
// precondition. An object found under a wanted name that the owner does not control is a
// Conflict (package ownerref): reported, never touched. Decisions are pure (ownerref.Decide,
// importable by code that does no I/O); a Client reads, with a read-through to the API server
// for names the label-filtered cache cannot see, and carries the decisions out.
package owned

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/owned/ownerref"
)

// Relabelling an object made by an older raygate updates it (the autoscaler's
// ServiceAccount is otherwise never updated).
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=update

// Client reads and writes the objects one owner owns, for one pass.
type Client struct {
	// Writer creates, updates and deletes; its scheme names kinds in conflicts.
	Writer client.Client
	// Cache is where objects of cached kinds are read (nil: Writer, whose reads come from the
	// manager's cache). It holds only objects raygate labels.
	Cache client.Reader
	// API reads from the API server (nil: Writer).
	API client.Reader
	// Names remembers names found taken (nil: nothing is remembered).
	Names *TakenNames
	// Owner is the object the pass reconciles, and OwnerKind its kind: names are remembered
	// per owner, and conflicts call it "this <OwnerKind>".
	Owner     types.NamespacedName
	OwnerKind string
	// uncached: the kind is not in the cache (see Uncached).
	uncached bool
}

// Uncached is c for a kind the manager does not cache (Secrets, ConfigMaps, claims): reads
// go to the API server, and an object found under a wanted name is never relabelled (no
// label would make a cache hold it, and raygate may have no right to update it).
func (c Client) Uncached() Client {
	c.uncached = true
	return c
}

// ReadingFrom is c reading cached kinds from r (cert-manager's objects are cached by the
// manager's cache but not read through its client).
func (c Client) ReadingFrom(r client.Reader) Client {
	c.Cache = r
	return c
}

func (c Client) cache() client.Reader {
	if c.Cache != nil {
		return c.Cache
	}
	return c.Writer
}

func (c Client) api() client.Reader {
	if c.API != nil {
		return c.API
	}
	return c.Writer
}

// Get reads the object called key into obj; found is false when there is none. A cached
// kind is read from the cache, and from the API server when the cache lacks a name a create
// found taken, until the API server says it is gone or the cache holds it; an uncached kind
// is read from the API server (a name found taken stays remembered while the object is
// there). opts apply to the cache's read.
func (c Client) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) (found bool, err error) {
	n := nameOf(obj, key)
	if c.uncached {
		return c.getAPI(ctx, n, obj)
	}
	switch err := c.cache().Get(ctx, key, obj, opts...); {
	case err == nil:
		c.settled(n) // the cache holds it now
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading %s %s: %w", c.kindOf(obj), key.Name, err)
	case !c.remembered(n):
		return false, nil
	}
	return c.getAPI(ctx, n, obj)
}

// Object is a pointer to an API object an owner owns (nil: none).
type Object interface {
	comparable
	client.Object
}

// Read is Get returning the object read into blank, or nil when there is none.
func Read[T Object](ctx context.Context, c Client, key types.NamespacedName, blank T, opts ...client.GetOption) (T, error) {
	var none T
	if found, err := c.Get(ctx, key, blank, opts...); err != nil || !found {
		return none, err
	}
	return blank, nil
}

// getAPI reads from the API server; a name found gone is forgotten.
func (c Client) getAPI(ctx context.Context, n takenName, obj client.Object) (bool, error) {
	switch err := c.api().Get(ctx, n.key, obj); {
	case apierrors.IsNotFound(err):
		c.settled(n)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s: %w", c.kindOf(obj), n.key.Name, err)
	}
	return true, nil
}

// Created is what Create found.
type Created struct {
	// Existing is the object a create found under the name (nil: the create made desired).
	Existing client.Object
	// Conflict describes Existing when desired's controller does not control it (nil: it
	// does; an older raygate made it, and it was relabelled for the cache if need be).
	Conflict *ownerref.Conflict
}

// Create creates desired, which carries its controller reference. When the name is taken,
// the object there is read from the API server: desired's controller's own (made by an
// older raygate, or not in the cache yet) is relabelled if the cache cannot see it; anyone
// else's is remembered, to be read from the API server from now on, and described.
func (c Client) Create(ctx context.Context, desired client.Object) (Created, error) {
	err := c.Writer.Create(ctx, desired)
	if !apierrors.IsAlreadyExists(err) {
		return Created{}, err
	}
	existing := blankLike(desired)
	n := nameOf(desired, client.ObjectKeyFromObject(desired))
	if err := c.api().Get(ctx, n.key, existing); err != nil {
		return Created{}, fmt.Errorf("reading %s %s: %w", c.kindOf(desired), n.key.Name, err)
	}
	if !ownerref.SameController(existing, desired) {
		c.Remember(existing)
		conflict := c.ConflictOf(existing, desired)
		return Created{Existing: existing, Conflict: &conflict}, nil
	}
	c.settled(n)
	if !c.uncached {
		if err := Relabel(ctx, c.Writer, existing); err != nil {
			return Created{}, err
		}
	}
	return Created{Existing: existing}, nil
}

// Update writes obj, an object the owner controls as it was read with the owner's fields
// set: its resourceVersion makes the write fail if the object changed since it was read.
func (c Client) Update(ctx context.Context, obj client.Object) error {
	return c.Writer.Update(ctx, obj)
}

// Delete deletes obj as it was read, with its UID as precondition, so an object made under
// its name since is never deleted. An object already gone is not an error.
func (c Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	uid := obj.GetUID()
	err := c.Writer.Delete(ctx, obj, append([]client.DeleteOption{client.Preconditions{UID: &uid}}, opts...)...)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Applied is what Apply did.
type Applied struct {
	// Done: the change was written (an object created, updated or deleted).
	Done bool
	// Conflict is a foreign object found under the wanted name: the change's (Report) or
	// one a create found.
	Conflict *ownerref.Conflict
}

// Apply carries out a change decided with ownerref.Decide (or a decision like it). A
// report describes the object, which is left as it is.
func (c Client) Apply(ctx context.Context, ch ownerref.Change[client.Object]) (Applied, error) {
	switch ch.Op {
	case ownerref.Create:
		res, err := c.Create(ctx, ch.Object)
		return Applied{Done: err == nil && res.Existing == nil, Conflict: res.Conflict}, err
	case ownerref.Update:
		err := c.Update(ctx, ch.Object)
		return Applied{Done: err == nil}, err
	case ownerref.Recreate, ownerref.Delete:
		err := c.Delete(ctx, ch.Object)
		return Applied{Done: err == nil}, err
	case ownerref.Report:
		conflict := ownerref.NewConflict(c.kindOf(ch.Object), ch.Object, "this "+c.OwnerKind)
		return Applied{Conflict: &conflict}, nil
	}
	return Applied{}, nil
}

// ConflictOf describes found, an object under the name of want (built for its owner, or
// carrying only its owner's controller reference), as a conflict.
func (c Client) ConflictOf(found client.Object, want metav1.Object) ownerref.Conflict {
	return ownerref.NewConflict(c.kindOf(found), found, ownerref.WantedOwner(want, c.OwnerKind))
}

// Remember notes that obj, read from the API server, is under a wanted name but not the
// owner's, so it is read from there (and reported) on the next passes too.
func (c Client) Remember(obj client.Object) {
	if c.Names != nil {
		c.Names.remember(c.Owner, nameOf(obj, client.ObjectKeyFromObject(obj)))
	}
}

// Remembered reports whether a name was found taken (and is not settled yet): an uncached
// kind needs reading only then.
func (c Client) Remembered(obj client.Object, key types.NamespacedName) bool {
	return c.remembered(nameOf(obj, key))
}

// Settled forgets a name found taken: the object is gone, or the owner's.
func (c Client) Settled(obj client.Object, key types.NamespacedName) {
	c.settled(nameOf(obj, key))
}

func (c Client) remembered(n takenName) bool { return c.Names != nil && c.Names.has(c.Owner, n) }

func (c Client) settled(n takenName) {
	if c.Names != nil {
		c.Names.drop(c.Owner, n)
	}
}

// kindOf names obj's kind for messages: from its scheme, or its Go type.
func (c Client) kindOf(obj client.Object) string {
	if c.Writer != nil {
		if gvk, err := apiutil.GVKForObject(obj, c.Writer.Scheme()); err == nil {
			return gvk.Kind
		}
	}
	return fmt.Sprintf("%T", obj)
}

// blankLike is an empty object of obj's type (of its kind, for an unstructured one), to
// read into: reading into a copy of obj would merge its maps with what is read.
func blankLike(obj client.Object) client.Object {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		blank := &unstructured.Unstructured{}
		blank.SetGroupVersionKind(u.GroupVersionKind())
		return blank
	}
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
}

// Relabel gives an object the owner controls (made by an older raygate), as read from the
// API server, the label the cache selects on, so the cache holds it from then on. It is an
// update: the object's resourceVersion makes it fail if the object changed since it was read.
func Relabel(ctx context.Context, w client.Writer, obj client.Object) error {
	if ownerref.Labelled(obj) {
		return nil
	}
	l := maps.Clone(obj.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[rayv1.KubernetesCreatedByLabelKey] = rayv1.ComponentName
	obj.SetLabels(l)
	if err := w.Update(ctx, obj); err != nil {
		return fmt.Errorf("labelling %s: %w", obj.GetName(), err)
	}
	return nil
}

// Labelled reports whether obj carries the label raygate's cache selects its objects on.
func Labelled(obj client.Object) bool { return ownerref.Labelled(obj) }
