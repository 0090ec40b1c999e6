#!/usr/bin/env bash
# Runs the README's two set-up commands as a new user would, in a fresh Debian 12 (bookworm)
# minbase root with only python3 added, and prints the wall time of each. Needs root and
# debootstrap (apt-get install debootstrap); reaches only Debian's mirror and PyPI.
#   scripts/check_fresh_debian.sh ROOTDIR [demo|test|both]
# ROOTDIR is made with debootstrap when it does not exist yet; the checkout is copied in as a
# clean clone of its HEAD (what `git clone` gives), never as the working tree.
set -euo pipefail
root="${1:?usage: check_fresh_debian.sh ROOTDIR [demo|test|both]}"
what="${2:-both}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

[ "$(id -u)" = 0 ] || { echo "check_fresh_debian: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
if [ ! -x "$root/usr/bin/apt-get" ]; then
  debootstrap --variant=minbase bookworm "$root" "$mirror"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# debootstrap writes no /etc/hosts (the installer or cloud-init does, on every real machine), and
# Spark binds "localhost": give the root the file an installed Debian has.
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
# The host's trust store goes in beside (not into) the root's own, for pip only: where the network
# passes through a TLS-intercepting proxy (as on this project's machines), pip must trust its CA.
# On an ordinary network this changes nothing.
hostca=""
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/host-ca-certificates.crt"
  hostca="PIP_CERT=/etc/host-ca-certificates.crt"
fi
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
fi
mounted=()
cleanup() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
for m in proc dev dev/pts dev/shm; do
  mkdir -p "$root/$m"
  mountpoint -q "$root/$m" && continue
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    dev/shm) mount -t tmpfs shm "$root/dev/shm" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounted=("$root/$m" "${mounted[@]}")
done

# python3 only, as a cloud image ships it: no pip, no venv, no headers, no compiler
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c \
  'command -v python3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null; }; python3 -V'

rm -rf "$root/root/neardup"
git clone -q "$repo" "$root/root/neardup"

run() {  # $1: label, $2: the README's command
  local t0 t1 rc
  t0=$(date +%s.%N)
  set +e
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 $hostca bash -c "cd /root/neardup && $2"
  rc=$?
  set -e
  t1=$(date +%s.%N)
  printf 'check_fresh_debian: %s: exit %d, %.0f s\n' "$1" "$rc" "$(echo "$t1 - $t0" | bc)" >&2
  return $rc
}
status=0
case $what in demo|both) run "bash scripts/demo.sh" "bash scripts/demo.sh" || status=1 ;; esac
case $what in test|both) run "bash scripts/test.sh" "bash scripts/test.sh -p no:cacheprovider -rs" || status=1 ;; esac
exit $status
