package faults

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listenForWebhooks starts the balancer on the port envtest's webhook configurations name.
// envtest chose that port when the control plane started, and the CRDs are installed in
// between: on a loaded machine another process may have taken it by then (seen once). The
// balancer then listens on a free port and the configurations are pointed there; the
// serving certificate names the host only.
func listenForWebhooks(ctx context.Context, c client.Client, host string, port int) (*balancer, error) {
	b, err := startBalancer(host, port)
	if !errors.Is(err, syscall.EADDRINUSE) {
		return b, err
	}
	if b, err = startBalancer(host, 0); err != nil {
		return nil, err
	}
	_, free, _ := net.SplitHostPort(b.l.Addr().String())
	if err := repointWebhooks(ctx, c, net.JoinHostPort(host, strconv.Itoa(port)), net.JoinHostPort(host, free)); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// repointWebhooks rewrites every webhook URL at from (host:port) to to.
func repointWebhooks(ctx context.Context, c client.Client, from, to string) error {
	move := func(cfg *admissionregistrationv1.WebhookClientConfig) {
		if cfg.URL != nil {
			u := strings.Replace(*cfg.URL, "//"+from+"/", "//"+to+"/", 1)
			cfg.URL = &u
		}
	}
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &mutating); err != nil {
		return err
	}
	for i := range mutating.Items {
		m := &mutating.Items[i]
		for j := range m.Webhooks {
			move(&m.Webhooks[j].ClientConfig)
		}
		if err := c.Update(ctx, m); err != nil {
			return err
		}
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &validating); err != nil {
		return err
	}
	for i := range validating.Items {
		v := &validating.Items[i]
		for j := range v.Webhooks {
			move(&v.Webhooks[j].ClientConfig)
		}
		if err := c.Update(ctx, v); err != nil {
			return err
		}
	}
	return nil
}
