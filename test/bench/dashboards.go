package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// serveDashboards serves the simulated Ray dashboards on a loopback port, /<namespace>/<cluster>/
// to each cluster's simulator, and returns the flag that points raygate at them and what
// stops the server.
func serveDashboards(dashboards *raysim.Registry) (urlTemplateFlag string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	front := &http.Server{Handler: dashboards.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = front.Serve(l) }()
	return "--dashboard-url-template=http://" + l.Addr().String() + "/{namespace}/{name}", func() { _ = front.Close() }, nil
}

// dialRefusals is the error of a run whose operator called addresses it must never dial
// (noDialProxy), nil when it called none.
func dialRefusals(p *kuberay.Proxy) error {
	if refused := p.Refused(); len(refused) > 0 {
		return fmt.Errorf("the operator called %d addresses that must never be dialled, first %q", len(refused), refused[0])
	}
	return nil
}
