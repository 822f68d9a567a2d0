#!/usr/bin/env bash
# Builds kube-apiserver VERSION (v1.x.y) from the Go module proxy into DEST,
# for the tests that have a real API server validate brokerbench's
# Kubernetes objects (internal/kube/kubetest). k8s.io/kubernetes points
# its staging modules at ./staging; a throwaway module points them at their
# published versions (v0.x.y) instead.
set -euo pipefail
version=$1 dest=$2
staging="v0.${version#v1.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init brokerbench-kube-apiserver >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
sed -n '/^replace (/,/^)/p' "$gomod" | awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging/ {print "replace " $1 " => " $1 " " v}' >> go.mod
cat > main.go <<'EOF'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
EOF
go get "k8s.io/kubernetes@$version" >/dev/null 2>&1
go mod tidy >/dev/null 2>&1
mkdir -p "$dest"
CGO_ENABLED=0 go build -o "$dest/kube-apiserver.tmp" -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)" .
mv "$dest/kube-apiserver.tmp" "$dest/kube-apiserver"
echo "kube-apiserver $version: $dest/kube-apiserver"
