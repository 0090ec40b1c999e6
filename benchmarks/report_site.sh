#!/usr/bin/env bash
# `neardup report` on a real site: an HTML manual installed from Debian, plus the seed's examples.
#
# Usage: benchmarks/report_site.sh [python|postgresql] [OUTPUT_DIR]
#   python      /usr/share/doc/python3/html        (Debian package python3-doc; the default)
#   postgresql  /usr/share/doc/postgresql-doc-*/html (Debian package postgresql-doc)
#   OUTPUT_DIR  default /tmp/neardup-report-<site>; the seed examples go to OUTPUT_DIR-seed
# Env: PYTHON (default python3), REPORT_ARGS (extra options for neardup report, e.g. "--sample 5000")
# Installs the package with apt-get when missing (root or sudo), then prints the report's summary and
# the wall time. Needs `pip install -e '.[io,report]'`.
set -euo pipefail

site="${1:-python}"
python="${PYTHON:-python3}"
case "$site" in
    python)     pkg=python3-doc ;;
    postgresql) pkg=postgresql-doc ;;
    *) echo "error: unknown site '$site' (use python or postgresql)" >&2; exit 2 ;;
esac
out="${2:-/tmp/neardup-report-$site}"

if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "installing $pkg" >&2
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "$pkg"
fi

case "$site" in
    python)     root=/usr/share/doc/python3/html ;;
    postgresql) root="$(ls -d /usr/share/doc/postgresql-doc-*/html | sort -V | tail -1)" ;;
esac
[[ -d "$root" ]] || { echo "error: $root not found after installing $pkg" >&2; exit 1; }

echo "== neardup report $root -> $out" >&2
SECONDS=0
# shellcheck disable=SC2086
"$python" -m neardup report "$root" --output "$out" ${REPORT_ARGS:-}
echo "wall time: ${SECONDS} s"

echo "== neardup report --seed-examples -> $out-seed" >&2
"$python" -m neardup report --seed-examples --output "$out-seed" >/dev/null
"$python" - "$out-seed/report.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["seed_examples"]
t, b, sh, last = s["shingle_table"], s["by_hand_minhash"], s["simhash"], s["figure1"]["at"][-1]
print(f"seed: J(d1,d2) = {t['shared']}/{t['union']}; by hand {b['agreements']}/6 agree; "
      f"standard errors {', '.join(format(e['stderr'], '.3f') for e in s['standard_errors'])}; "
      f"simhash {sh['d1']} {sh['d2']} differ in {sh['hamming_d1_d2']} bits; "
      f"figure 1 at m=200: median {last['median']:.3f}, middle half {last['q25']:.3f}..{last['q75']:.3f}")
PY
echo "open $out/report.html"
