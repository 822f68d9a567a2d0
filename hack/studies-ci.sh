#!/usr/bin/env bash
# make studies-ci: runs built-in studies at smoke scale, each lane of
# studies one after another and the lanes side by side.
#
#   hack/studies-ci.sh "broker-comparison kafka-security" "resilience kafka-versions"
#
# Each lane runs in a network namespace of its own (a private loopback,
# so two studies' local clusters never meet on a port) with a state
# directory of its own under $STUDIES_STATE. Where a network namespace
# cannot be made (not root, no unshare), the lanes run one after another
# on the machine's loopback instead. A study fails its lane at its first
# failed run; the script exits with the first failing lane's status, after
# every lane ended. Each lane's output is printed when it ends.
set -u
bin=${BIN:-bin/brokerbench}
state=${STUDIES_STATE:?STUDIES_STATE must name the state directory of the studies}

# lane STUDY...: the studies, one after another; stops at the first failure.
lane() {
  local n
  for n in "$@"; do
    rm -rf "results/studies/$n"
    echo "== study $n"
    "$bin" study "studies/$n.yaml" --scale smoke --out "results/studies/$n" --quiet || return $?
    test -s "results/studies/$n/report.html" || { echo "study $n wrote no report"; return 1; }
  done
}

if ! unshare -n true 2>/dev/null || ! command -v ip >/dev/null; then
  echo "no network namespace here: the studies run one after another"
  for l in "$@"; do
    # shellcheck disable=SC2086 # a lane is a list of study names
    BROKERBENCH_STATE=$state lane $l || exit $?
  done
  exit 0
fi

logs=$(mktemp -d)
pids=()
names=("$@")
export -f lane
i=0
for l in "$@"; do
  i=$((i + 1))
  # shellcheck disable=SC2016 # expanded by the lane's shell
  BROKERBENCH_STATE=$state/lane-$i bin=$bin unshare -n bash -c 'ip link set lo up && lane $0' "$l" >"$logs/$i" 2>&1 &
  pids+=($!)
done
status=0
i=0
for p in "${pids[@]}"; do
  i=$((i + 1))
  wait "$p"
  s=$?
  echo "== lane $i (${names[$((i - 1))]}): exit $s"
  cat "$logs/$i"
  [ "$status" -eq 0 ] && status=$s
done
rm -rf "$logs"
exit "$status"
