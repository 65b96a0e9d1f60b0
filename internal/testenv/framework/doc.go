// Package framework is the shared harness of raygate's envtest suites:
//
//   - StartKubelet: a fake kubelet that makes pods Running and Ready (with pod IPs and
//     container statuses) and injects failures on request.
//   - StartManager: runs the raygate manager in-process against a control plane; Stop waits
//     for it to exit, so a test can restart it with empty memory. It counts every write the
//     manager sends to the API server.
//   - CountingClient: a client.Client wrapper counting writes by verb and kind.
//
// A suite starts a control plane with internal/testenv/controlplane, then these.
package framework
