#!/usr/bin/env bash
# Memory soak: runs brokerbench at maximum rate for DURATION (default 10m)
# against a broker this script starts on 127.0.0.1:29692, samples the
# load generator's RSS every 10 s from /proc, writes CPU and heap profiles,
# and prints start, end and peak RSS. Stops the broker by PID at the end.
#
#   bench/rss-soak.sh            # 10 minutes
#   bench/rss-soak.sh 2m
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
port=29692
out=bench/results
mkdir -p "$out"
make -s build
state=$(mktemp -d)
bin/brokerbench local up kafka --port "$port" --state-dir "$state" --heap-mb 1024
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
  bin/brokerbench local down kafka --port "$port" --state-dir "$state"
  rm -rf "$state"
}
trap cleanup EXIT

bin/brokerbench run bench/workloads/soak-max-rate-100b.yaml --broker "127.0.0.1:$port" \
  --duration "$duration" --quiet --pprof "$out/soak-pprof" -o "$out/soak.json" > "$out/soak-summary.txt" 2>&1 &
pid=$!
: > "$out/soak-rss.tsv"
start=$(date +%s)
while [ -r "/proc/$pid/status" ]; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && printf '%d\t%d\n' "$(( $(date +%s) - start ))" "$rss" >> "$out/soak-rss.tsv"
  sleep 10
done
wait "$pid" || echo "brokerbench exited with $? (see $out/soak-summary.txt)"
pid=
cat "$out/soak-summary.txt"
awk 'NR==1 {first=$2} {last=$2; if ($2>peak) peak=$2}
     END {printf "RSS (MiB): first sample %.1f, last %.1f, peak %.1f over %d samples\n", first/1024, last/1024, peak/1024, NR}' "$out/soak-rss.tsv"
