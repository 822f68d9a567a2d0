#!/usr/bin/env bash
# make studies-ci: runs built-in studies at smoke scale, each lane of
# studies one after another and the lanes side by side.
#
#   hack/studies-ci.sh "resilience kafka-versions" "broker-comparison kafka-security"
#
# The first lane runs on the machine's own network, so its studies may
# download broker releases not yet in the cache (kafka-versions does);
# each other lane runs in a network namespace of its own, a private
# loopback without any other network, so its studies' local clusters
# never meet another lane's on a port and their brokers must already be in
# the cache (make test installs every kind's pinned release). Each lane
# has a state directory of its own under $STUDIES_STATE. Where a network
# namespace cannot be made (not root, no unshare), the lanes run one after
# another instead. A study fails its lane at its first failed run; the
# script exits with the first failing lane's status, after every lane
# ended. Each lane's output is printed when it ends; Ctrl-C or SIGTERM
# interrupts every lane's study, which stops the clusters it started.
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
  if [ "$i" -eq 1 ]; then
    # shellcheck disable=SC2016 # expanded by the lane's shell
    BROKERBENCH_STATE=$state/lane-$i bin=$bin bash -c 'lane $0' "$l" >"$logs/$i" 2>&1 &
  else
    # shellcheck disable=SC2016 # expanded by the lane's shell
    BROKERBENCH_STATE=$state/lane-$i bin=$bin unshare -n bash -c 'ip link set lo up && lane $0' "$l" >"$logs/$i" 2>&1 &
  fi
  pids+=($!)
done

# interrupt asks every lane's study to stop (SIGTERM, which brokerbench
# takes as Ctrl-C: it writes its partial results and stops the clusters
# it started), then waits for the lanes.
interrupt() {
  for p in "${pids[@]}"; do
    pkill -TERM -P "$p" 2>/dev/null
  done
  wait
  rm -rf "$logs"
  exit 130
}
trap interrupt INT TERM

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
