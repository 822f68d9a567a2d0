#!/usr/bin/env bash
# Usage: hack/local-kubernetes.sh up|down
#
# A one-node Kubernetes on this machine, for running 'brokerbench k8s run
# --host-network' with real pods (docs/distributed.md): etcd and
# containerd + runc from Debian's packages, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet v1.34 built from the
# Go module proxy (hack/build-kube.sh, cached), every process on loopback,
# pods on the host network only (no CNI). 'up' also imports brokerbench's
# image (make image) into containerd. State and logs live in $K8S_DIR
# (default /tmp/brokerbench-k8s); the admin kubeconfig is
# $K8S_DIR/admin.kubeconfig. 'down' stops every process by its PID.
set -euo pipefail
cmd=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
K8S_DIR=${K8S_DIR:-/tmp/brokerbench-k8s}
version=v1.34.4
bins=${XDG_CACHE_HOME:-$HOME/.cache}/brokerbench/kubernetes-$version
etcd_port=39879 api_port=39443

stop() {
  for p in kubelet kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
    f=$K8S_DIR/$p.pid
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  # The pods' processes: containerd's shims and what they run.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io" 2>/dev/null || true
  mountpoint -q "$K8S_DIR/kubelet" 2>/dev/null && umount -R "$K8S_DIR/kubelet" || true
}

start() { # name logfile command...
  local name=$1; shift
  "$@" > "$K8S_DIR/$name.log" 2>&1 &
  echo $! > "$K8S_DIR/$name.pid"
}

case $cmd in
down) stop; echo "stopped"; exit 0 ;;
up) ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
command -v jq >/dev/null || need+=(jq)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
missing=()
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  [ -x "$bins/$c" ] || missing+=("$c")
done
[ ${#missing[@]} -eq 0 ] || "$root/hack/build-kube.sh" "$version" "$bins" "${missing[@]}"

stop
mkdir -p "$K8S_DIR"/{pki,containerd,pod-logs,kubelet}
cd "$K8S_DIR/pki"
if [ ! -f ca.crt ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=brokerbench-local-kubernetes" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc,IP:10.96.0.1\n' > san.ext
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 30 -extfile san.ext 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=admin" 2>/dev/null
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 30 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
fi
pki=$K8S_DIR/pki
kubeconfig=$K8S_DIR/admin.kubeconfig
cat > "$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$pki/ca.crt"}}]
users: [{name: admin, user: {client-certificate: "$pki/admin.crt", client-key: "$pki/admin.key"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
EOF

start etcd etcd --data-dir "$K8S_DIR/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
  --initial-cluster "default=http://127.0.0.1:$((etcd_port + 1))"
start kube-apiserver "$bins/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
  --secure-port "$api_port" --endpoint-reconciler-type none --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 --authorization-mode Node,RBAC \
  --allow-privileged=true --kubelet-preferred-address-types Hostname --cert-dir "$K8S_DIR/apiserver-certs"
for _ in $(seq 120); do
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/readyz" >/dev/null && break
  sleep 0.5
done
curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/readyz" >/dev/null || {
  echo "kube-apiserver did not become ready: $K8S_DIR/kube-apiserver.log" >&2; exit 1; }
start kube-controller-manager "$bins/kube-controller-manager" --kubeconfig "$kubeconfig" --leader-elect=false \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials=false \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" --bind-address 127.0.0.1 --secure-port 0 \
  --controllers '*,-nodeipam,-nodelifecycle,-service-lb-controller,-route'
start kube-scheduler "$bins/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0

# containerd, with runc through a wrapper: root here lacks CAP_SYS_RESOURCE,
# so negative OOM score adjustments are raised to 0.
cat > "$K8S_DIR/runc-wrap" <<'EOF'
#!/bin/bash
args=("$@"); bundle=""
for ((i=0;i<${#args[@]};i++)); do
  case "${args[$i]}" in
    --bundle|-b) bundle="${args[$((i+1))]}";;
    --bundle=*) bundle="${args[$i]#--bundle=}";;
  esac
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  tmp="$bundle/config.json.tmp"
  jq -c 'if (.process.oomScoreAdj // 0) < 0 then .process.oomScoreAdj = 0 else . end' "$bundle/config.json" > "$tmp" && mv "$tmp" "$bundle/config.json"
fi
exec runc "$@"
EOF
chmod +x "$K8S_DIR/runc-wrap"
sock=$K8S_DIR/containerd/containerd.sock
cat > "$K8S_DIR/containerd.toml" <<EOF
version = 2
root = "$K8S_DIR/containerd/root"
state = "$K8S_DIR/containerd/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    BinaryName = "$K8S_DIR/runc-wrap"
EOF
start containerd containerd --config "$K8S_DIR/containerd.toml"
for _ in $(seq 60); do [ -S "$sock" ] && break; sleep 0.5; done

# Images: the pod sandbox's pause image (a brokerbench-built binary that
# waits for its signal), and brokerbench's own.
make -C "$root" image >/dev/null
pause=$(mktemp -d)
cat > "$pause/main.go" <<'EOF'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
EOF
(cd "$pause" && go mod init pause >/dev/null 2>&1 && CGO_ENABLED=0 go build -o pause .)
"$root/bin/brokerbench" k8s image --binary "$pause/pause" --tag registry.k8s.io/pause:3.9 --out "$pause/pause.tar" >/dev/null
ctr -a "$sock" -n k8s.io images import "$pause/pause.tar" >/dev/null
ctr -a "$sock" -n k8s.io images import "$root/bin/brokerbench-image.oci.tar" >/dev/null
rm -rf "$pause"

cat > "$K8S_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
failCgroupV1: false
podLogsDirectory: $K8S_DIR/pod-logs
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerNode: true
EOF
start kubelet "$bins/kubelet" --config "$K8S_DIR/kubelet.yaml" --kubeconfig "$kubeconfig" --root-dir "$K8S_DIR/kubelet" \
  --hostname-override localhost
for _ in $(seq 120); do
  "$root/bin/brokerbench" version >/dev/null 2>&1
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/api/v1/nodes/localhost" >/dev/null && break
  sleep 0.5
done
echo "local Kubernetes $version up: KUBECONFIG=$kubeconfig (state and logs in $K8S_DIR; stop with '$0 down')"
