#!/usr/bin/env bash
# raygate on a real cluster, from nothing to an incremental RayService upgrade:
#
#   cluster      a kind cluster (skip it to use the cluster of your current kubeconfig)
#   certmanager  cert-manager, which issues raygate's webhook certificate
#   gateway      Envoy Gateway, a Gateway API implementation, and its GatewayClass
#   raygate      raygate from this checkout: `make image`, loaded into kind, installed with Helm
#   rayservice   a RayService upgraded incrementally through that GatewayClass, until Ready
#   upgrade      a new image: a second cluster takes the traffic step by step, the old one goes
#   traffic      one request through the Gateway (kubectl port-forward)
#   cleanup      delete the kind cluster
#
# Run from the repository root, every step or some of them, in order:
#
#   docs/walkthrough/kind.sh
#   docs/walkthrough/kind.sh certmanager gateway raygate rayservice upgrade   # an existing cluster
#
# Needs kind (for the cluster step), docker, kubectl and helm 3 or 4; the raygate step needs Go
# (make image). A kind node pulling rayproject/ray (several GB) takes a while: the RayService
# step waits up to 20 minutes.
#
# test/e2e runs the rayservice and upgrade steps against `make run`'s cluster, with
# GATEWAY_CLASS=raygate-local (the local mode's Traefik) and KUBECTL set to the kubectl it
# prints (TestLocalModeRayJobs, test/e2e/walkthrough_test.go), so the raygate part of this
# script is what the tests run.
set -euo pipefail

KUBECTL=${KUBECTL:-kubectl}
HELM=${HELM:-helm}
KIND=${KIND:-kind}
CLUSTER_NAME=${CLUSTER_NAME:-raygate}
NAMESPACE=${NAMESPACE:-default}
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.21.2}
ENVOY_GATEWAY_VERSION=${ENVOY_GATEWAY_VERSION:-v1.6.0}
GATEWAY_CLASS=${GATEWAY_CLASS:-eg}
VERSION=${VERSION:-v0.1.0-walkthrough}
# The RayService's images before and after the upgrade.
RAY_IMAGE=${RAY_IMAGE:-rayproject/ray:2.52.0}
RAY_IMAGE_NEXT=${RAY_IMAGE_NEXT:-rayproject/ray:2.52.1}
# How long the rayservice and upgrade steps wait.
WAIT_SECONDS=${WAIT_SECONDS:-1200}

kc() { "$KUBECTL" "$@"; }
say() { printf '\n== %s\n' "$*"; }
# run shows a command as you would type it, then runs it.
run() {
  local shown=("$@")
  case $1 in kc) shown[0]=kubectl ;; "$HELM") shown[0]=helm ;; "$KIND") shown[0]=kind ;; esac
  printf '$ %s\n' "${shown[*]}"
  "$@"
}

# jsonpath reads one field of the RayService.
field() { kc -n "$NAMESPACE" get rayservice walkthrough -o "jsonpath=$1"; }

# until_true polls a shell condition every 2 s for at most WAIT_SECONDS.
until_true() {
  local what=$1 cond=$2 start=$SECONDS
  until eval "$cond"; do
    if (( SECONDS - start > WAIT_SECONDS )); then
      echo "timed out after ${WAIT_SECONDS}s waiting for: $what" >&2
      kc -n "$NAMESPACE" get rayservice walkthrough -o wide >&2 || true
      return 1
    fi
    sleep 2
  done
}

step_cluster() {
  say "a kind cluster"
  run "$KIND" create cluster --name "$CLUSTER_NAME" --wait 2m
}

step_certmanager() {
  say "cert-manager $CERT_MANAGER_VERSION"
  run "$HELM" upgrade --install cert-manager cert-manager --repo https://charts.jetstack.io \
    --version "$CERT_MANAGER_VERSION" --namespace cert-manager --create-namespace \
    --set crds.enabled=true --wait
}

step_gateway() {
  say "Envoy Gateway $ENVOY_GATEWAY_VERSION (it installs the Gateway API CRDs) and the GatewayClass $GATEWAY_CLASS"
  run "$HELM" upgrade --install eg oci://docker.io/envoyproxy/gateway-helm \
    --version "$ENVOY_GATEWAY_VERSION" --namespace envoy-gateway-system --create-namespace --wait
  kc apply -f - <<EOF
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: $GATEWAY_CLASS
spec:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
EOF
  run kc wait --for=condition=Accepted "gatewayclass/$GATEWAY_CLASS" --timeout=2m
}

step_raygate() {
  say "raygate $VERSION from this checkout"
  run make image VERSION="$VERSION"
  run "$KIND" load image-archive bin/image.tar --name "$CLUSTER_NAME"
  kc create namespace raygate-system --dry-run=client -o yaml | kc apply -f -
  run kc label --overwrite namespace raygate-system \
    pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest
  # Only this GatewayClass for incremental upgrades; ClusterIP Services only (the default).
  run "$HELM" upgrade --install raygate charts/raygate --namespace raygate-system \
    --set image.tag="$VERSION" --set "policy.allowedGatewayClasses={$GATEWAY_CLASS}" --wait
  run kc -n raygate-system rollout status deployment/raygate
}

step_rayservice() {
  say "a RayService upgraded incrementally through GatewayClass $GATEWAY_CLASS"
  kc -n "$NAMESPACE" apply -f - <<EOF
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: walkthrough
spec:
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: $GATEWAY_CLASS
      maxSurgePercent: 100
      # Half the traffic per step, one step every 5 s: a short walkthrough, not a production
      # pace. Admission says so in two warnings (maxSurgePercent 100, intervalSeconds < 10).
      stepSizePercent: 50
      intervalSeconds: 5
  rayClusterDeletionDelaySeconds: 10
  serveConfigV2: |
    applications:
    - name: fruit
      route_prefix: /fruit
      import_path: fruit.deployment_graph
      runtime_env:
        working_dir: "https://github.com/ray-project/test_dag/archive/78b4a5da38796123d9f9ffff59bab2792a043e95.zip"
      deployments:
      - name: MangoStand
        num_replicas: 1
        user_config:
          price: 3
        ray_actor_options:
          num_cpus: 0.1
      - name: FruitMarket
        num_replicas: 1
        ray_actor_options:
          num_cpus: 0.1
  rayClusterConfig:
    rayVersion: "2.52.0"
    enableInTreeAutoscaling: true
    headGroupSpec:
      rayStartParams:
        num-cpus: "0"
      template:
        spec:
          containers:
          - name: ray-head
            image: $RAY_IMAGE
            resources:
              requests: {cpu: "1", memory: 2Gi}
              limits: {cpu: "1", memory: 2Gi}
    workerGroupSpecs:
    - groupName: cpu
      minReplicas: 1
      maxReplicas: 2
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: $RAY_IMAGE
            resources:
              requests: {cpu: "1", memory: 2Gi}
              limits: {cpu: "1", memory: 2Gi}
EOF
  until_true "the RayService Ready" \
    '[ "$(field "{.status.conditions[?(@.type==\"Ready\")].status}")" = True ]'
  echo "RayService walkthrough Ready: active cluster $(field '{.status.activeServiceStatus.rayClusterName}')"
  run kc -n "$NAMESPACE" get rayservice walkthrough -o wide
}

step_upgrade() {
  local old
  old=$(field '{.status.activeServiceStatus.rayClusterName}')
  say "upgrade: $RAY_IMAGE -> $RAY_IMAGE_NEXT (active cluster $old)"
  run kc -n "$NAMESPACE" patch rayservice walkthrough --type=json -p "[
    {\"op\":\"replace\",\"path\":\"/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image\",\"value\":\"$RAY_IMAGE_NEXT\"},
    {\"op\":\"replace\",\"path\":\"/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/image\",\"value\":\"$RAY_IMAGE_NEXT\"}]"
  # The HTTPRoute's weights, each time they change, until the new cluster is active alone.
  local last="" weights active pending
  until_true "the new cluster promoted" '
    weights=$(kc -n "$NAMESPACE" get httproute walkthrough-httproute \
      -o "jsonpath={range .spec.rules[0].backendRefs[*]}{.name}={.weight} {end}" 2>/dev/null || true)
    [ "$weights" = "$last" ] || { echo "HTTPRoute weights: $weights"; last=$weights; }
    active=$(field "{.status.activeServiceStatus.rayClusterName}")
    pending=$(field "{.status.pendingServiceStatus.rayClusterName}")
    [ -n "$active" ] && [ "$active" != "$old" ] && [ -z "$pending" ]'
  echo "promoted: RayCluster $active serves all traffic"
  # The old cluster stays rayClusterDeletionDelaySeconds for requests in flight.
  run kc -n "$NAMESPACE" wait --for=delete "raycluster/$old" --timeout="${WAIT_SECONDS}s"
  echo "RayCluster $old deleted"
  # The weights above are samples every 2 s; raygate records every traffic step as an event.
  run kc -n "$NAMESPACE" get events --field-selector reason=ShiftedTraffic,involvedObject.name=walkthrough \
    -o custom-columns=REASON:.reason,MESSAGE:.message
  run kc -n "$NAMESPACE" get rayservice walkthrough -o wide
}

step_traffic() {
  say "one request through the Gateway"
  local svc
  svc=$(kc -n envoy-gateway-system get service \
    -l "gateway.envoyproxy.io/owning-gateway-namespace=$NAMESPACE,gateway.envoyproxy.io/owning-gateway-name=walkthrough-gateway" \
    -o jsonpath='{.items[0].metadata.name}')
  kc -n envoy-gateway-system port-forward "service/$svc" 8080:80 >/dev/null &
  local pf=$!
  # The port-forward ends with this step, or with the script if the request fails.
  trap "kill $pf 2>/dev/null || true" EXIT
  sleep 3
  run curl -sS --fail --max-time 10 -X POST -H 'Content-Type: application/json' \
    -d '["MANGO", 2]' http://127.0.0.1:8080/fruit/
  echo
  kill "$pf" 2>/dev/null || true
}

step_cleanup() {
  say "delete the kind cluster"
  run "$KIND" delete cluster --name "$CLUSTER_NAME"
}

main() {
  local steps=("$@")
  if (( ${#steps[@]} == 0 )); then
    steps=(cluster certmanager gateway raygate rayservice upgrade traffic)
  fi
  for s in "${steps[@]}"; do
    if ! declare -F "step_$s" >/dev/null; then
      echo "unknown step $s; steps: cluster certmanager gateway raygate rayservice upgrade traffic cleanup" >&2
      exit 2
    fi
  done
  for s in "${steps[@]}"; do
    "step_$s"
  done
}

main "$@"
