#!/usr/bin/env bash
# Usage: hack/build-kube.sh VERSION DEST [COMPONENT...]
# Builds Kubernetes components of VERSION (v1.x.y) from the Go module proxy
# into DEST: kube-apiserver (the default) for the tests that have a real
# API server validate brokerbench's Kubernetes objects
# (internal/kube/kubetest), and kube-controller-manager, kube-scheduler
# and kubelet for hack/local-kubernetes.sh. k8s.io/kubernetes points its
# staging modules at ./staging; a throwaway module points them at their
# published versions (v0.x.y) instead.
set -euo pipefail
version=$1 dest=$2
shift 2
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(kube-apiserver)
staging="v0.${version#v1.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init brokerbench-kube >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
sed -n '/^replace (/,/^)/p' "$gomod" | awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging/ {print "replace " $1 " => " $1 " " v}' >> go.mod
for c in "${components[@]}"; do
  case $c in
    kube-apiserver) call='app.NewAPIServerCommand()' ;;
    kube-controller-manager) call='app.NewControllerManagerCommand()' ;;
    kube-scheduler) call='app.NewSchedulerCommand()' ;;
    kubelet) call='app.NewKubeletCommand(context.Background())' ;;
    *) echo "unknown component $c" >&2; exit 2 ;;
  esac
  mkdir -p "cmd/$c"
  imports='"os"'
  [ "$c" = kubelet ] && imports='"context"
	"os"'
  cat > "cmd/$c/main.go" <<EOF
package main

import (
	$imports

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/$c/app"
)

func main() { os.Exit(cli.Run($call)) }
EOF
done
go get "k8s.io/kubernetes@$version" >/dev/null 2>&1
go mod tidy >/dev/null 2>&1
mkdir -p "$dest"
minor=$(echo "$version" | cut -d. -f2)
for c in "${components[@]}"; do
  CGO_ENABLED=0 go build -o "$dest/$c.tmp" -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" "./cmd/$c"
  mv "$dest/$c.tmp" "$dest/$c"
  echo "$c $version: $dest/$c"
done
