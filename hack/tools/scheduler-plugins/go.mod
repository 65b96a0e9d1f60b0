module github.com/raygate/raygate/hack/tools/scheduler-plugins

go 1.26.0

require sigs.k8s.io/scheduler-plugins v0.33.5
