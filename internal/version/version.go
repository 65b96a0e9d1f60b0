// Package version holds the raygate build version. It is stamped on the pods raygate
// creates (annotation ray.io/kuberay-version) so a newer operator can tell the pods an older
// one built and re-stamp them instead of recreating them.
package version

// Version is overridden at build time:
//
//	go build -ldflags "-X github.com/raygate/raygate/internal/version.Version=v0.1.0" ./cmd/raygate
var Version = "dev"
