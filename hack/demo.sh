#!/usr/bin/env bash
# make demo: installs Kafka if needed and starts it on 127.0.0.1:9092 (the
# warm-up run does both), warms the broker's JVM with an unmeasured
# max-rate burst, runs the quick workload (summary, results/demo.json,
# results/demo-omb.json), then the demo study at quick scale
# (results/demo-study/) with its HTML report, and stops the broker it
# started.
#
# A verdict is a result, not a failure of the demo: a missed target (3),
# a load-generator-bound run (6) or a machine disturbed by other processes
# (7) is reported and the demo goes on to its report. It fails only when a
# run could not be made (1), input was bad (2), it was interrupted (4) or
# messages were lost or miscounted (5).
set -u
bin=${BIN:-bin/brokerbench}

verdict() {
  case $1 in
    0) echo "ok" ;;
    3) echo "target not held, or consumers fell behind (exit 3)" ;;
    6) echo "load-generator-bound (exit 6)" ;;
    7) echo "machine disturbed by other processes (exit 7)" ;;
    *) echo "exit $1" ;;
  esac
}

# measured CODE: true when CODE is a verdict the demo reports and goes on.
measured() { case $1 in 0|3|6|7) return 0 ;; *) return 1 ;; esac; }

started=false
stop() { if $started; then "$bin" local down kafka; fi; }
trap stop EXIT

# The warm-up run starts the broker when none runs (installing Kafka the
# first time), as a run's own: the demo stops it at the end, and later runs
# that need another shape (a study's 3-broker setups) may replace it. A
# broker the user started with 'local up' is used and left running.
if "$bin" local status kafka --json 2>/dev/null | grep -q '"running": true'; then
  echo "demo: using the Kafka broker already running (it stays running)"
else
  started=true
fi

if $started; then
  echo "demo: starting Kafka on 127.0.0.1:9092 (installing it the first time) and warming it up (unmeasured)"
else
  echo "demo: warming up the broker (unmeasured)"
fi
"$bin" run workloads/quick.yaml --rate 0 --messages 300000 --quiet --out results/demo-warmup.json >/dev/null
code=$?
rm -f results/demo-warmup.json
measured $code || { echo "demo: the warm-up failed: $(verdict $code)" >&2; exit $code; }

"$bin" run workloads/quick.yaml --out results/demo.json --omb-json results/demo-omb.json
quick=$?
measured $quick || { echo "demo: the quick run failed: $(verdict $quick)" >&2; exit $quick; }

rm -rf results/demo-study
"$bin" study studies/demo.yaml --scale quick --out results/demo-study
study=$?
[ $study -eq 0 ] || { echo "demo: the study failed (exit $study)" >&2; exit $study; }

echo
echo "demo: done"
echo "  quick run:  $(verdict $quick); results/demo.json, results/demo-omb.json"
echo "  demo study: every run made; its verdicts are on the line above, each with its reason in results/demo-study/report.html"
