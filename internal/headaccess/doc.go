// Package headaccess is what the RayService and RayJob controllers share to reach a Ray
// cluster's head from off the reconcile workers: the cluster's auth token, read by name from
// its Secret and kept briefly; the hand-off of a dashboard pool's word to the controller's
// queue; the informer store of RayClusters the controllers read without a copy.
package headaccess
