# brokerbench: the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := bin/brokerbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/brokerbench/brokerbench/internal/sysinfo.Version=$(VERSION)

.PHONY: build demo test test-fast lint fuzz studies studies-ci clean image kube-apiserver docs

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/brokerbench

# Installs Kafka if needed and starts it on 127.0.0.1:9092 (or uses the
# one running), warms it up, runs the quick workload, then the demo study
# with its HTML report, and stops the broker if it started it. A verdict
# (a missed target, a disturbed machine) is reported, not a failure: see
# hack/demo.sh.
demo: build
	@BIN=$(BIN) hack/demo.sh

# The studies' local clusters live in a state directory of their own, so
# that the clusters the user started with 'local up' (running or stopped,
# with their data) are neither used, replaced nor refused over; a study
# stops the clusters it starts. A cluster the user runs on a port a study
# needs is reported as a port in use.
STUDIES_STATE ?= $${XDG_CACHE_HOME:-$$HOME/.cache}/brokerbench/studies-state

# Every built-in study at quick scale, each setup on the local cluster of
# its size that brokerbench starts (1 to 6 brokers), faults included: what
# a fresh clone must run with nothing skipped but missing capabilities.
# About 15 minutes on 2 cores; reports in results/studies/NAME/.
studies: build
	@for s in studies/*.yaml; do \
	  n=$$(basename $$s .yaml); [ $$n = demo ] && continue; \
	  rm -rf results/studies/$$n; \
	  echo "== study $$n"; \
	  BROKERBENCH_STATE=$(STUDIES_STATE) $(BIN) study $$s --scale quick --out results/studies/$$n --quiet || exit $$?; \
	  test -s results/studies/$$n/report.html || exit 1; \
	done

# CI's share of the studies: the plan of every built-in study, and at smoke
# scale (one short run per setup, faults played out) those that
# TestBuiltInStudiesSmoke (internal/cli) cannot run on its one Kafka broker:
# faults, secured setups and Kafka releases on local clusters, and other
# brokers (the demo study runs in make demo; make studies runs them all at
# quick scale). kafka-versions starts a broker of each of its 4 releases,
# downloading those not in the cache. The two lanes run side by side, the
# second in a network namespace of its own where one can be made (see
# hack/studies-ci.sh), else one after the other; the first keeps the
# machine's network for those downloads.
CI_STUDY_LANES := "resilience kafka-versions tanzu-rabbitmq" "broker-comparison kafka-security"
studies-ci: build
	@for s in studies/*.yaml; do \
	  $(BIN) study $$s --list >/dev/null || { echo "study $$s: its plan fails"; exit 1; }; \
	done
	@BIN=$(BIN) STUDIES_STATE=$(STUDIES_STATE) hack/studies-ci.sh $(CI_STUDY_LANES)

# brokerbench's container image, as an OCI tarball (no Docker needed):
# import it with 'ctr --address /tmp/brokerbench-k8s/containerd/containerd.sock -n k8s.io
# images import' (hack/local-kubernetes.sh's containerd), or push it to a registry.
image: build
	$(BIN) k8s image --out bin/brokerbench-image.oci.tar --tag brokerbench:$(VERSION)

# A real kube-apiserver for the tests of brokerbench's Kubernetes objects
# (internal/kube/kubetest), built from the Go module proxy once into the
# cache (about 5 minutes on 2 cores); they skip without it.
KUBE_VERSION := v1.34.4
KUBE_DIR = $${XDG_CACHE_HOME:-$$HOME/.cache}/brokerbench/kubernetes-$(KUBE_VERSION)
kube-apiserver:
	@test -x $(KUBE_DIR)/kube-apiserver || hack/build-kube.sh $(KUBE_VERSION) $(KUBE_DIR) kube-apiserver

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The full suite: unit tests, fuzz seed corpora, and integration tests
# against real brokers the tests start themselves. The others run first,
# in parallel; then the packages whose tests start brokers (they import
# internal/testbroker), BROKER_TEST_PACKAGES at a time (default 2), the
# longest (cli) first. Each package's brokers have ports of their own, and
# every test accepts what a busy machine gives, so two packages share the
# cores as they would share them with a user's other work (three at a
# time, beside other work, left RabbitMQ's client timing out); installs
# of one broker kind take turns (a lock in the cache).
# The RocketMQ Go client (rocketmq-clients v5.1.2, the only one served)
# races with itself (the proxy's settings are applied while calls read
# them), so its conformance tests skip under -race and run again without;
# go-nsq's producer races with its own goroutine when it connects again,
# so the NSQ cluster test checks that reconnection without -race.
PKGS_CLIENT_RACES = ./internal/brokers/rocketmq ./internal/brokers/nsq
PKGS_WITH_BROKERS = $(shell $(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | awk '/internal\/testbroker( |$$)/ {print $$1}')
PKGS_WITHOUT_BROKERS = $(filter-out $(PKGS_WITH_BROKERS),$(shell $(GO) list ./...))
BROKER_TEST_PACKAGES ?= 2

test: lint
	$(GO) test -race -count=1 -timeout 20m $(PKGS_WITHOUT_BROKERS)
	$(GO) test -race -p $(BROKER_TEST_PACKAGES) -count=1 -timeout 20m $(filter %/internal/cli,$(PKGS_WITH_BROKERS)) $(filter-out %/internal/cli,$(PKGS_WITH_BROKERS))
	$(GO) test -count=1 -timeout 10m $(PKGS_CLIENT_RACES)

# Every test that needs no real broker, for the edit-test loop: under
# -short the tests that need one skip, naming it (testbroker.Need).
# Under 2 minutes on 2 cores with warm caches; make test, which CI calls,
# runs everything.
test-fast: lint
	$(GO) test -race -short -count=1 ./...

# The command-line reference, docs/cli.md, rewritten from the command tree;
# make test fails (TestCLIReferenceIsCurrent) while it is out of date.
docs:
	$(GO) test ./internal/cli -run '^TestCLIReferenceIsCurrent$$' -count=1 -update-cli-doc

# Short coverage-guided fuzzing of every parser. The budget is a count of
# executions per target, not a duration: with a duration, Go 1.26's fuzz
# coordinator can race its own deadline and fail a target with a bare
# "context deadline exceeded" and no failing input (go.dev/issue/75804).
# 200000 executions take 3 to 35 s per target on a 2-core machine.
FUZZTIME ?= 200000x
fuzz:
	$(GO) test ./internal/workload -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/workload -run '^$$' -fuzz '^FuzzParseProperties$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/payload -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/payload -run '^$$' -fuzz '^FuzzSizes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/changepoint -run '^$$' -fuzz '^FuzzDetect$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-nsq-tools -run '^$$' -fuzz '^FuzzPeerSummary$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-rocketmq-tools -run '^$$' -fuzz '^FuzzPerfRate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/artemis -run '^$$' -fuzz '^FuzzDecodeReply$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/artemis -run '^$$' -fuzz '^FuzzParseURL$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/artemis -run '^$$' -fuzz '^FuzzParseJolokia$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/rabbitmq/amqp10 -run '^$$' -fuzz '^FuzzSettings$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/pacer -run '^$$' -fuzz '^FuzzReadCurve$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/maxrate -run '^$$' -fuzz '^FuzzParseSLO$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/workload -run '^$$' -fuzz '^FuzzParseStudy$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/results -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/report -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/results -run '^$$' -fuzz '^FuzzReadJournal$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/metrics -run '^$$' -fuzz '^FuzzCountsIndex$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/metrics -run '^$$' -fuzz '^FuzzCountsEncode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/secret -run '^$$' -fuzz '^FuzzExpand$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/pki -run '^$$' -fuzz '^FuzzParseTrustStore$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/pki -run '^$$' -fuzz '^FuzzParseKeyStore$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/kafka -run '^$$' -fuzz '^FuzzParseJAAS$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokermetrics -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/nats -run '^$$' -fuzz '^FuzzParseVarz$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/mqtt -run '^$$' -fuzz '^FuzzParseServerURI$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/mqtt -run '^$$' -fuzz '^FuzzPacketConn$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/mqtt -run '^$$' -fuzz '^FuzzParseSys$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/nsq -run '^$$' -fuzz '^FuzzParseStats$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/nsq -run '^$$' -fuzz '^FuzzParseLookupdNodes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/nsq -run '^$$' -fuzz '^FuzzParseEndpoints$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/redis -run '^$$' -fuzz '^FuzzParseInfo$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/pulsar -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/pulsar -run '^$$' -fuzz '^FuzzParseStats$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/pulsar -run '^$$' -fuzz '^FuzzAuthParams$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/rocketmq -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/rocketmq -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/brokers/rocketmq -run '^$$' -fuzz '^FuzzParseRoute$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/local -run '^$$' -fuzz '^FuzzCheckRelease$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/accounting -run '^$$' -fuzz '^FuzzSeqSetUnmarshal$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/kube -run '^$$' -fuzz '^FuzzReadFiles$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/kube/kubeapi -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/distributed -run '^$$' -fuzz '^FuzzDecodeAssignment$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/history -run '^$$' -fuzz '^FuzzFromOMB$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/capture -run '^$$' -fuzz '^FuzzObserve$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-omb -run '^$$' -fuzz '^FuzzParseOMBResult$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-omb -run '^$$' -fuzz '^FuzzReadPom$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-omb -run '^$$' -fuzz '^FuzzPointAt$$' -fuzztime $(FUZZTIME)
	$(GO) test ./bench/compare-omb -run '^$$' -fuzz '^FuzzOMBWorkloadTime$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/proc -run '^$$' -fuzz '^FuzzParseSocketLine$$' -fuzztime $(FUZZTIME)

clean:
	rm -rf bin results
