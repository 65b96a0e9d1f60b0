// Package framework is the shared harness of raygate's envtest suites:
//
//   - StartKubelet: a fake kubelet that makes pods Running and Ready (with pod IPs and
//     container statuses) and injects failures on request.
//   - StartManager / StartManagerAs: run the raygate manager in-process against a control
//     plane, with the admin's rights or as ServiceAccount.Config says; Stop waits for it to
//     exit, so a test can restart it with empty memory. It counts every write the manager
//     sends to the API server and records every request the authorizer refuses it.
//   - GrantChartRBAC: binds a ServiceAccount the RBAC the Helm chart installs (rules read
//     from config/rbac, laid out per mode by ChartRBAC).
//   - CountingClient: a client.Client wrapper counting writes by verb and kind.
//
// Suites start all of it with one call, suite.Start (package
// internal/testenv/framework/suite), which also fails every spec during which a manager was
// refused a request.
package framework
