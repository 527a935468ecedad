#!/usr/bin/env bash
# Builds a real kube-apiserver and client-go's own leader-election candidate from Debian 12's
# source package `kubernetes` (1.20), for the Kubernetes Lease tests: no registry ships the
# server. Kept outside the clone, in $ELECTOP_KUBE_DIR (default /var/lib/electop-kube); a
# second run finds them and does nothing. About 6 minutes on 2 cores from a cold Go cache.
#
# The recipe (measured in docs/stores/kubernetes.md):
# - the source comes from bookworm's and bookworm-security's deb-src entries, through a private
#   apt directory, so the machine's own sources are left alone;
# - `dpkg-source -x` applies Debian's patches; the build follows the package's debian/rules: a
#   GOPATH inside the tree (`.go/src/k8s.io/kubernetes` a link back to it), CGO off, vendored
#   modules (built outside that layout Go asks for go.mod updates it may not make);
# - the vendored github.com/modern-go/reflect2 1.0.1 crashes the server on its first Lease
#   write under Go 1.19 (`fatal error: fault … UnsafeMapType.UnsafeIterate`): it is replaced
#   whole by Debian's golang-github-modern-go-reflect2-dev (1.0.2), without its go.mod.
set -euo pipefail

DIR=${ELECTOP_KUBE_DIR:-/var/lib/electop-kube}
BIN=$DIR/bin
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2

if [[ -x $BIN/kube-apiserver && -x $BIN/leader-election && -x $BIN/kubectl ]] \
  && "$BIN/kube-apiserver" --version >/dev/null 2>&1; then
  echo "kube-apiserver, kubectl and client-go's leader-election candidate already built in $BIN"
  exit 0
fi

for tool in go rsync jq make dpkg-source; do
  command -v "$tool" >/dev/null || { echo "build-kube: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
[[ -d $REFLECT2 ]] || { echo "build-kube: $REFLECT2 is missing: install golang-github-modern-go-reflect2-dev" >&2; exit 1; }

work=$DIR/src
mkdir -p "$work/apt/lists/partial" "$BIN"
cat >"$work/apt/sources.list" <<'EOF'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
apt=(-q -o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists")
cd "$work"
if ! ls kubernetes_*.dsc >/dev/null 2>&1; then
  echo "build-kube: fetching Debian's kubernetes source package"
  apt-get "${apt[@]}" update >/dev/null
  apt-get "${apt[@]}" source --download-only kubernetes >/dev/null 2>&1
fi
rm -rf tree
dpkg-source -x kubernetes_*.dsc tree >/dev/null
cd tree
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp -r "$REFLECT2"/. vendor/github.com/modern-go/reflect2/
rm -f vendor/github.com/modern-go/reflect2/go.mod
mkdir -p .go/src/k8s.io
[[ -L .go/src/k8s.io/kubernetes ]] || ln -s ../../.. .go/src/k8s.io/kubernetes
export GOPATH=$PWD/.go CGO_ENABLED=0 GOFLAGS=-mod=vendor
# Only what is missing (kubectl came later: the bench reads Leases with it).
: >"$DIR/build.log"
for what in cmd/kube-apiserver vendor/k8s.io/client-go/examples/leader-election cmd/kubectl; do
  name=${what##*/}
  [[ -x $BIN/$name ]] && continue
  echo "build-kube: building $name (kube-apiserver: about 5 minutes)"
  make WHAT="$what" >>"$DIR/build.log" 2>&1 || { tail -20 "$DIR/build.log" >&2; exit 1; }
  install -m 0755 "_output/bin/$name" "$BIN/"
done
cd "$work" && rm -rf tree
echo "build-kube: kube-apiserver, kubectl and leader-election are in $BIN"
