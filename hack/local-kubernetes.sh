#!/usr/bin/env bash
# Usage: hack/local-kubernetes.sh up|down
#
# A one-node Kubernetes on this machine, for running 'brokerbench k8s run
# --host-network' with real pods (docs/distributed.md): etcd and
# containerd + runc from Debian's packages, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet v1.34 built from the
# Go module proxy (hack/build-kube.sh, cached: the first 'up' builds them
# in about 15 minutes on 2 cores), every process on loopback, pods on the
# host network only (no CNI). 'up' also imports brokerbench's image (make
# image) into the cluster's containerd.
#
# 'down' stops what 'up' started and nothing else: its processes by the
# PIDs it recorded in the state directory, the pods' processes as the
# containerd shims serving this cluster's containerd socket (and what
# they run), and it unmounts what is mounted under the state directory.
#
# Settings, from the environment; two clusters on one machine each need
# their own state directory, ports and cgroup root:
#   K8S_DIR                   state and logs (default /tmp/brokerbench-k8s);
#                             the admin kubeconfig is $K8S_DIR/admin.kubeconfig,
#                             containerd's socket $K8S_DIR/containerd/containerd.sock
#   K8S_API_PORT              kube-apiserver's port (default 29443)
#   K8S_ETCD_PORT             etcd's client port (default 29879)
#   K8S_ETCD_PEER_PORT        etcd's peer port (default K8S_ETCD_PORT + 1)
#   K8S_KUBELET_PORT          the kubelet's port (default 10250)
#   K8S_KUBELET_HEALTHZ_PORT  the kubelet's health port (default 10248)
#   K8S_CGROUP_ROOT           the cgroup the pods' cgroups go under (default /,
#                             as for any kubelet: two kubelets under one root
#                             remove each other's pods), e.g. /brokerbench-2
#   K8S_NODE_IP               the node's address (default: the kubelet's
#                             choice, the address of the default route's
#                             interface; with no default route, the first
#                             global address here). Nothing connects to it.
set -euo pipefail
cmd=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
die() {
  echo "$0: $*" >&2
  exit 1
}

K8S_DIR=${K8S_DIR:-/tmp/brokerbench-k8s}
case $K8S_DIR in /*) ;; *) K8S_DIR=$PWD/$K8S_DIR ;; esac
while [[ $K8S_DIR == */ ]]; do K8S_DIR=${K8S_DIR%/}; done
[ -n "$K8S_DIR" ] || die "K8S_DIR=/: give the cluster a directory of its own"
[[ ! $K8S_DIR =~ [[:space:]] ]] || die "K8S_DIR=$K8S_DIR: give a directory whose path has no spaces"
sock=$K8S_DIR/containerd/containerd.sock
version=v1.34.4
bins=${XDG_CACHE_HOME:-$HOME/.cache}/brokerbench/kubernetes-$version
# Set by kill_wait when a process outlives SIGKILL.
stop_failed=

# alive PID...: those of the PIDs whose process still runs (a zombie does
# not).
alive() {
  local p s
  for p in "$@"; do
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    s=${s##*) }
    [ "${s%% *}" = Z ] || echo "$p"
  done
}

# ours PID: is it a process of this cluster, one with an argument under
# $K8S_DIR? (A PID file's process may have ended and its PID been reused.)
ours() {
  local a
  while IFS= read -r -d '' a; do
    case $a in "$K8S_DIR"/*) return 0 ;; esac
  done 2>/dev/null < "/proc/$1/cmdline" || true
  return 1
}

# kill_wait WHAT PID...: SIGTERM, up to 10 s for them to end, then
# SIGKILL, and a check that they are gone.
kill_wait() {
  local what=$1 left=()
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 50); do
    mapfile -t left < <(alive "$@")
    [ ${#left[@]} -gt 0 ] || return 0
    sleep 0.2
  done
  kill -KILL "${left[@]}" 2>/dev/null || true
  sleep 0.5
  mapfile -t left < <(alive "${left[@]}")
  if [ ${#left[@]} -gt 0 ]; then
    echo "$0: $what: still running after SIGKILL: PID ${left[*]}" >&2
    stop_failed=1
  fi
}

# stop_started NAME...: the processes 'up' started, by their PID files.
stop_started() {
  local name f pid
  for name in "$@"; do
    f=$K8S_DIR/$name.pid
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if [[ $pid =~ ^[0-9]+$ ]] && [ -n "$(alive "$pid")" ] && ours "$pid"; then
      kill_wait "$name" "$pid"
    fi
    rm -f "$f"
  done
}

# shims: the PIDs of the containerd shims serving this cluster's
# containerd: their -address is its socket (another containerd's shims
# name that containerd's).
shims() {
  local d a prev
  for d in /proc/[0-9]*; do
    case $(cat "$d/comm" 2>/dev/null) in containerd-shim*) ;; *) continue ;; esac
    prev=
    while IFS= read -r -d '' a; do
      if [ "$prev" = -address ] && [ "$a" = "$sock" ]; then
        echo "${d#/proc/}"
        break
      fi
      prev=$a
    done 2>/dev/null < "$d/cmdline" || true
  done
}

# descendants PID...: the PIDs of their children, their children's
# children, and so on.
descendants() {
  local -A kids=()
  local d s p c ppid
  local todo=("$@")
  for d in /proc/[0-9]*; do
    s=$(cat "$d/stat" 2>/dev/null) || continue
    s=${s##*) }
    read -r _ ppid _ <<< "$s"
    kids[$ppid]+=" ${d#/proc/}"
  done
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    for c in ${kids[$p]:-}; do
      echo "$c"
      todo+=("$c")
    done
  done
}

# cgroup_mounts: where each cgroup hierarchy is mounted.
cgroup_mounts() {
  awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/self/mounts
}

# stop: everything this cluster runs, the kubelet first (so it starts no
# more containers) and etcd last; then its mounts and its cgroup root.
stop() {
  local shim_pids=() pod_pids=() m cg
  stop_started kubelet
  # The pods' processes: what the shims of this cluster's containerd run,
  # and the shims.
  mapfile -t shim_pids < <(shims)
  if [ ${#shim_pids[@]} -gt 0 ]; then
    mapfile -t pod_pids < <(descendants "${shim_pids[@]}")
    kill_wait "the pods' processes and containerd's shims" "${pod_pids[@]}" "${shim_pids[@]}"
  fi
  stop_started containerd kube-scheduler kube-controller-manager kube-apiserver etcd
  # What the pods mounted (volumes, root file systems) lies under
  # $K8S_DIR; the deepest first.
  if [ -d "$K8S_DIR" ]; then
    awk -v d="$K8S_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while IFS= read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "$0: could not unmount $m" >&2
    done
  fi
  # The cgroups 'up' made for K8S_CGROUP_ROOT, with what the kubelet made
  # in them; the deepest first.
  if [ -f "$K8S_DIR/cgroups" ]; then
    sort -r "$K8S_DIR/cgroups" | while IFS= read -r cg; do
      [ ! -d "$cg" ] || find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || echo "$0: could not remove the cgroup $cg" >&2
    done
    rm -f "$K8S_DIR/cgroups"
  fi
  [ -z "$stop_failed" ] || die "some processes of the cluster in $K8S_DIR did not end (above)"
}

start() { # name command...: runs the command in the background, its output in name.log and its PID in name.pid
  local name=$1
  shift
  "$@" > "$K8S_DIR/$name.log" 2>&1 &
  echo $! > "$K8S_DIR/$name.pid"
}

case $cmd in
down)
  stop
  echo "stopped the cluster in $K8S_DIR"
  exit 0
  ;;
up) ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac

for v in K8S_API_PORT K8S_ETCD_PORT K8S_ETCD_PEER_PORT K8S_KUBELET_PORT K8S_KUBELET_HEALTHZ_PORT; do
  [ -z "${!v:-}" ] || { [[ ${!v} =~ ^[1-9][0-9]{0,4}$ ]] && [ "${!v}" -le 65535 ]; } || die "$v=${!v}: give a TCP port (1 to 65535)"
done
api_port=${K8S_API_PORT:-29443}
etcd_port=${K8S_ETCD_PORT:-29879}
etcd_peer_port=${K8S_ETCD_PEER_PORT:-$((etcd_port + 1))}
[ "$etcd_peer_port" -le 65535 ] || die "K8S_ETCD_PORT=$etcd_port: its peer port, one more, is no TCP port: give K8S_ETCD_PEER_PORT"
kubelet_port=${K8S_KUBELET_PORT:-10250}
kubelet_healthz_port=${K8S_KUBELET_HEALTHZ_PORT:-10248}
ports=("K8S_API_PORT=$api_port (kube-apiserver)" "K8S_ETCD_PORT=$etcd_port (etcd)" "K8S_ETCD_PEER_PORT=$etcd_peer_port (etcd's peers)"
  "K8S_KUBELET_PORT=$kubelet_port (kubelet)" "K8S_KUBELET_HEALTHZ_PORT=$kubelet_healthz_port (kubelet's health)")
[ "$(printf '%s\n' "${ports[@]}" | sed 's/^[^=]*=\([0-9]*\).*/\1/' | sort | uniq -d)" = "" ] || die "two settings give the same port: ${ports[*]}"
cgroup_root=${K8S_CGROUP_ROOT:-/}
[[ $cgroup_root == / || $cgroup_root =~ ^(/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$ ]] || die "K8S_CGROUP_ROOT=$cgroup_root: give an absolute cgroup path such as /brokerbench-2"

need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
command -v jq >/dev/null || need+=(jq)
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
stop

# listening PORT: does a socket on this machine listen on TCP port PORT?
listening() {
  local files=() f
  for f in /proc/net/tcp /proc/net/tcp6; do [ ! -r "$f" ] || files+=("$f"); done
  [ ${#files[@]} -gt 0 ] || return 1
  awk -v p="$(printf ':%04X' "$1")" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p {found = 1} END {exit !found}' "${files[@]}"
}
# check_ports: none of the cluster's ports is taken (by another cluster
# of this script, or another program).
check_ports() {
  local p n
  for p in "${ports[@]}"; do
    n=${p#*=}
    n=${n%% *}
    if listening "$n"; then
      die "port $n is in use here ($p): another cluster of this script, or another program ('ss -ltnp sport = :$n' names it). Give this cluster other ports, e.g. K8S_API_PORT=$((api_port + 100)) K8S_ETCD_PORT=$((etcd_port + 100)) K8S_KUBELET_PORT=$((kubelet_port + 100)) K8S_KUBELET_HEALTHZ_PORT=$((kubelet_healthz_port + 100)), and its own K8S_DIR and K8S_CGROUP_ROOT"
    fi
  done
}
check_ports
if [ -z "${K8S_CGROUP_ROOT:-}" ]; then
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = kubelet ] || continue
    die "a kubelet runs here already (PID ${d#/proc/}), and two kubelets that put their pods' cgroups under the same root remove each other's pods: give this cluster a cgroup root of its own, e.g. K8S_CGROUP_ROOT=/brokerbench-2 (and its own K8S_DIR and ports)"
  done
fi

# The node's address. The kubelet takes the address of the default
# route's interface; with no default route it finds none, the node has no
# address, and the API server cannot reach the kubelet to read a pod's
# log ("no preferred addresses found"). It refuses loopback addresses, so
# take another address of this machine: the apiserver reaches the kubelet
# by its name, localhost, and nothing connects to this address.
node_ip=${K8S_NODE_IP:-}
if [ -z "$node_ip" ] && [ -z "$(ip -4 route show default)" ] && [ -z "$(ip -6 route show default)" ]; then
  node_ip=$(ip -o -4 addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')
  [ -n "$node_ip" ] || node_ip=$(ip -o -6 addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')
  [ -n "$node_ip" ] || die "this machine has no default route and no address but loopback and link-local ones, and the kubelet needs one that is neither for the node (else the node has no address, and reading a pod's log fails with 'no preferred addresses found'): add one, e.g. 'ip addr add 192.0.2.10/32 dev lo', and give it as K8S_NODE_IP=192.0.2.10; or add a default route"
  echo "no default route here: the node's address is $node_ip (K8S_NODE_IP sets another)"
fi

missing=()
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  [ -x "$bins/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "building ${missing[*]} $version into $bins (the first time: about 15 minutes on 2 cores)"
  "$root/hack/build-kube.sh" "$version" "$bins" "${missing[@]}"
  check_ports # again: the build took a while
fi

mkdir -p "$K8S_DIR"/{pki,containerd,pod-logs,kubelet,kubelet-pki}
if [ "$cgroup_root" != / ]; then
  # The kubelet requires its cgroup root to exist in every hierarchy; a
  # cpuset cgroup takes no processes until it has CPUs and memory nodes.
  # The cgroups made here are listed for 'down' to remove.
  : > "$K8S_DIR/cgroups"
  IFS=/ read -ra parts <<< "${cgroup_root#/}"
  for m in $(cgroup_mounts); do
    parent=$m dir=$m
    for part in "${parts[@]}"; do
      dir=$dir/$part
      if [ ! -d "$dir" ]; then
        mkdir "$dir"
        echo "$dir" >> "$K8S_DIR/cgroups"
      fi
      if [ -f "$m/cpuset.cpus" ]; then
        for f in cpuset.cpus cpuset.mems; do
          [ -n "$(cat "$dir/$f")" ] || cat "$parent/$f" > "$dir/$f"
        done
      fi
      parent=$dir
    done
  done
fi
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
api() { # path: GET it from the API server as the admin
  curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port$1"
}
down_hint="('$0 down' stops what it started)"

start etcd etcd --data-dir "$K8S_DIR/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "default=http://127.0.0.1:$etcd_peer_port"
start kube-apiserver "$bins/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
  --secure-port "$api_port" --endpoint-reconciler-type none --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 --authorization-mode Node,RBAC \
  --allow-privileged=true --kubelet-preferred-address-types Hostname --cert-dir "$K8S_DIR/apiserver-certs"
for _ in $(seq 120); do
  api /readyz >/dev/null && break
  sleep 0.5
done
api /readyz >/dev/null || die "kube-apiserver did not become ready: $K8S_DIR/kube-apiserver.log $down_hint"
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
for _ in $(seq 60); do
  [ -S "$sock" ] && break
  sleep 0.5
done
[ -S "$sock" ] || die "containerd did not open its socket $sock: $K8S_DIR/containerd.log $down_hint"

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
ctr --address "$sock" -n k8s.io images import "$pause/pause.tar" >/dev/null
ctr --address "$sock" -n k8s.io images import "$root/bin/brokerbench-image.oci.tar" >/dev/null
rm -rf "$pause"

cat > "$K8S_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz_port
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
$([ "$cgroup_root" = / ] || echo "cgroupRoot: $cgroup_root")
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
node=localhost
start kubelet "$bins/kubelet" --config "$K8S_DIR/kubelet.yaml" --kubeconfig "$kubeconfig" --root-dir "$K8S_DIR/kubelet" \
  --cert-dir "$K8S_DIR/kubelet-pki" --hostname-override "$node" ${node_ip:+--node-ip "$node_ip"}
addresses=
for _ in $(seq 120); do
  addresses=$(api "/api/v1/nodes/$node" | jq -r '[.status.addresses[]? | .type + " " + .address] | join(", ")') && [ -n "$addresses" ] && break
  sleep 0.5
done
api "/api/v1/nodes/$node" >/dev/null || die "the kubelet did not register the node $node within 60 s: $K8S_DIR/kubelet.log $down_hint"
[ -n "$addresses" ] || die "the node $node has no address, so the API server cannot read a pod's log ('no preferred addresses found'): $K8S_DIR/kubelet.log says why; give one with K8S_NODE_IP $down_hint"
echo "local Kubernetes $version up, node $node ($addresses): KUBECONFIG=$kubeconfig
state and logs in $K8S_DIR; stop it with 'K8S_DIR=$K8S_DIR $0 down'
a new image: make image && ctr --address $sock -n k8s.io images import bin/brokerbench-image.oci.tar"
