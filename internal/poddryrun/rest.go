package poddryrun

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// FieldManager names raygate's dry-run creates in the API server's audit log.
const FieldManager = "raygate-admission-dry-run"

// RESTCreator dry-runs pods through the API server with raygate's own identity, the one
// that creates the pods for real: policies that look at the requester see the same one.
type RESTCreator struct {
	client rest.Interface
}

// NewRESTCreator returns a creator with its own client on cfg: warnings are read from each
// response (not logged), requests are not retried (the caller's deadline is short), and
// the client's rate limiter is off because Checker bounds the dry-runs in flight instead,
// so dry-runs never wait behind the controllers' requests or hold them up.
func NewRESTCreator(cfg *rest.Config) (*RESTCreator, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = rest.NoWarnings{}, nil
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dry-run client: %w", err)
	}
	return &RESTCreator{client: c.RESTClient()}, nil
}

// DryRunCreate creates pod with dryRun=All in its namespace.
func (c *RESTCreator) DryRunCreate(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	res := c.client.Post().
		Namespace(pod.Namespace).
		Resource("pods").
		VersionedParams(&metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager}, metav1.ParameterCodec).
		MaxRetries(0).
		Body(pod).
		Do(ctx)
	var warnings []string
	for _, w := range res.Warnings() {
		warnings = append(warnings, w.Text)
	}
	return warnings, res.Error()
}
