// Package certmanager runs cert-manager's real controllers (hack/tools/cert-manager: the
// certificates controllers, issuers, approver, SelfSigned and CA issuers and the CA
// injector) against a test control plane, and plays the two parts of a cluster the chart's
// cert-manager mode relies on that a bare API server lacks: the kubelet projecting the
// issued Secret into the operator's certificate directory (SecretSync), and the network
// path from the API server to the webhook Service (Tunnel).
package certmanager

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/raygate/raygate/internal/testenv/proc"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// CertManager is a running cert-manager controllers process.
type CertManager struct{ p *proc.Process }

// Start runs cert-manager's controllers with an admin kubeconfig and waits until their
// informers have synced. Their log goes to log.
func Start(ctx context.Context, kubeconfig string, log io.Writer) (*CertManager, error) {
	bin, err := tools.Path("cert-manager")
	if err != nil {
		return nil, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	health := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--health-addr="+health, "-v=1")
	cmd.Stdout, cmd.Stderr = log, log
	p, err := proc.Start("cert-manager", cmd)
	if err != nil {
		return nil, err
	}
	if err := p.WaitReady(ctx, "http://"+health+"/readyz", 2*time.Minute); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	return &CertManager{p: p}, nil
}

// Stop stops the process.
func (c *CertManager) Stop() error {
	if err := c.p.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stopping cert-manager: %w", err)
	}
	return nil
}
