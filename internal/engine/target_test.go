package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestAddressesInAnySectionAreNotLocal: a driver config whose addresses
// are in producer or consumer properties alone (files made for Kafka's
// own tools) goes to those addresses, not to a local broker, unless
// --local-brokers asks for one.
func TestAddressesInAnySectionAreNotLocal(t *testing.T) {
	tgt := newTarget(IO{}, "", LocalOptions{})
	addr := workload.Properties{{Key: "bootstrap.servers", Value: "10.0.0.5:9093"}}
	for name, dc := range map[string]*workload.DriverConfig{
		"common":   {Name: "kafka", Common: addr},
		"producer": {Name: "kafka", Producer: addr},
		"consumer": {Name: "kafka", Consumer: addr},
	} {
		if tgt.usesLocal(dc) {
			t.Errorf("bootstrap.servers in %sConfig: the run would go to a local broker", name)
		}
	}
	if !tgt.usesLocal(&workload.DriverConfig{Name: "kafka"}) {
		t.Error("a config without addresses must go to the local broker")
	}
	// --local-brokers asks for the local cluster: its addresses replace
	// the config's (OMB's files name localhost:9092); --broker still wins.
	omb := &workload.DriverConfig{Name: "kafka", Common: workload.Properties{{Key: "bootstrap.servers", Value: "localhost:9092"}}}
	if !newTarget(IO{}, "", LocalOptions{Brokers: 3, BrokersGiven: true}).usesLocal(omb) {
		t.Error("--local-brokers 3 with OMB's driver file: the run would go to the file's localhost:9092, not the local cluster")
	}
	if newTarget(IO{}, "10.0.0.5:9092", LocalOptions{Brokers: 3, BrokersGiven: true}).usesLocal(omb) {
		t.Error("--broker with --local-brokers: the run would go to a local cluster, not the broker given")
	}
}

// TestOMBAddressesAreNotLocal: OMB's driver files name their brokers
// in settings of their own (brokerAddress, redisHost, natsHostUrl,
// nsqdHost, ...): a run of such a file goes to the brokers it names,
// never silently to a local broker, unless --local-brokers asks for
// one.
func TestOMBAddressesAreNotLocal(t *testing.T) {
	files, err := filepath.Glob("../brokers/omblayout/testdata/driver-*/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("OMB's driver files: %v, %v", files, err)
	}
	texts := map[string]string{
		"redis.yaml": "name: Redis\ndriverClass: io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver\nredisHost: 10.0.0.5\nredisPort: 6379\n",
		"nats.yaml":  "name: NATS\ndriverClass: io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver\nnatsHostUrl: nats://10.0.0.5:4222\n",
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(data)
	}
	for name, text := range texts {
		dc, err := workload.ParseDriver(name, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if newTarget(IO{}, "", LocalOptions{}).usesLocal(dc) {
			t.Errorf("%s: a run would go to a local broker, not to the one the file names", name)
		}
		if !newTarget(IO{}, "", LocalOptions{Brokers: 1, BrokersGiven: true}).usesLocal(dc) {
			t.Errorf("%s with --local-brokers 1: the run would not go to the local cluster", name)
		}
	}
}

// recorded describes a recorded local Kafka cluster of brokers nodes in
// /state/kafka-9092, serving listeners (none: plaintext), running or not,
// started by startedBy (a run in progress: runPID).
func recorded(brokers int, running bool, startedBy string, runPID int, listeners ...string) local.Status {
	if len(listeners) == 0 {
		listeners = []string{"plaintext"}
	}
	st := local.Status{Kind: "kafka", Version: "4.3.1", StateDir: "/state/kafka-9092", Running: running, Brokers: brokers,
		Listeners: listeners, StartedBy: startedBy, RunPID: runPID}
	for i := 1; i <= brokers; i++ {
		host := fmt.Sprintf("127.0.1.%d", i)
		ports := map[string]int{"client": 9092}
		for _, l := range listeners[1:] {
			ports[l] = 40000 + i
		}
		st.Nodes = append(st.Nodes, local.NodeStatus{Node: local.Node{ID: i, Host: host, Ports: ports}, Running: running})
		st.Bootstrap = append(st.Bootstrap, fmt.Sprintf("%s:9092", host))
	}
	return st
}

// TestChooseLocal: what runs do about the local cluster recorded for
// their broker kind. A running cluster that fits is used as it is,
// whoever started it; one that 'local up' started and does not fit is
// never stopped or replaced unless --replace, and the refusal says why and
// what to do; brokerbench's own leftovers are replaced.
func TestChooseLocal(t *testing.T) {
	t.Setenv("BROKERBENCH_STATE", "/state") // the records' directory is the default one
	const self = 1000
	rf := func(n int) localNeed {
		return localNeed{kind: "kafka", brokers: n, why: fmt.Sprintf("the workload's replication factor %d", n), listener: "plaintext", self: self}
	}
	with := func(n localNeed, edit func(*localNeed)) localNeed { edit(&n); return n }
	user, run := local.StartedByUser, local.StartedByRun
	for _, tc := range []struct {
		name string
		st   local.Status
		need localNeed
		use  bool
		// refused lists what the refusal must say; none: no refusal.
		refused []string
	}{
		{"nothing recorded: start one", local.Status{Kind: "kafka"}, rf(3), false, nil},
		// The finding: 'local up kafka --brokers 3', then a workload of
		// replication factor 3 and no --local-brokers.
		{"3 brokers 'local up' started, RF 3: used as is", recorded(3, true, user, 0), rf(3), true, nil},
		{"3 brokers, RF 1: used as is", recorded(3, true, user, 0), rf(1), true, nil},
		{"1 broker 'local up' started, RF 3: refused", recorded(1, true, user, 0), rf(3), false,
			[]string{"(1 broker, serving plaintext, release 4.3.1; running, started by 'local up') cannot take these runs", "has 1 broker; the workload's replication factor 3 needs at least 3",
				"'brokerbench local up kafka --brokers 3 --replace'", "add --replace", "--local-port"}},
		{"1 broker, RF 3, --replace: replaced", recorded(1, true, user, 0), with(rf(3), func(n *localNeed) { n.replace = true }), false, nil},
		{"--local-brokers 1 on 3 running: refused", recorded(3, true, user, 0), with(rf(1), func(n *localNeed) { n.exact, n.why = true, "--local-brokers 1" }), false,
			[]string{"has 3 brokers; --local-brokers 1 asks for 1", "'brokerbench local up kafka --replace'"}},
		// The finding: 'local up kafka --security sasl-ssl', then a
		// plain workload.
		{"sasl_ssl alone, plain driver: refused", recorded(1, true, user, 0, "sasl_ssl"), rf(1), false,
			[]string{"serves sasl_ssl, not the \"plaintext\" listener", "'brokerbench local status kafka'", "--security sasl_ssl,plaintext --replace"}},
		{"sasl_ssl alone, sasl_ssl driver: used as is", recorded(1, true, user, 0, "sasl_ssl"), with(rf(1), func(n *localNeed) { n.listener = "sasl_ssl" }), true, nil},
		{"every listener, ssl driver: used as is", recorded(1, true, user, 0, "plaintext", "ssl"), with(rf(1), func(n *localNeed) { n.listener = "ssl" }), true, nil},
		{"link faults, no link proxy: refused", recorded(3, true, user, 0), with(rf(3), func(n *localNeed) { n.links = true }), false,
			[]string{"does not carry its links through the link proxy", "--brokers 3 --links --replace"}},
		{"a study setup without network on a cluster with links: refused", func() local.Status {
			st := recorded(3, true, user, 0)
			st.LinkProxy = &local.NodeStatus{Running: true}
			return st
		}(), with(rf(3), func(n *localNeed) { n.exact, n.strict, n.why = true, true, `setup "regular"` }), false,
			[]string{`which setup "regular" does not ask for`}},
		{"2 of 3 nodes running: refused", func() local.Status {
			st := recorded(3, false, user, 0)
			st.Nodes[0].Running, st.Nodes[1].Running = true, true
			return st
		}(), rf(1), false, []string{"is not whole: 2 of its 3 nodes run", "'brokerbench local up kafka --brokers 3'"}},
		// The finding: a later 'local up rabbitmq' of one node replaced
		// the stopped 3-node cluster; a run would have done the same.
		{"stopped 3 brokers 'local up' started, RF 1: refused", recorded(3, false, user, 0), rf(1), false,
			[]string{"(3 brokers, serving plaintext, release 4.3.1; stopped, started by 'local up')", "would delete it and its data", "'brokerbench local up kafka --brokers 3'"}},
		{"stopped, of the shape needed: started again with its data", recorded(3, false, user, 0), rf(3), false, nil},
		{"stopped 1 broker, RF 3: refused", recorded(1, false, user, 0), rf(3), false, []string{"has 1 broker; the workload's replication factor 3 needs at least 3"}},
		{"a record that does not say who started it: kept", recorded(1, true, "", 0), rf(3), false, []string{"did not record by whom"}},
		{"left running by an ended run, fits: used as is", recorded(3, true, run, 0), rf(1), true, nil},
		{"left by an ended run, too small: replaced", recorded(1, true, run, 0), rf(3), false, nil},
		{"left stopped by an ended run: replaced", recorded(3, false, run, 0), rf(1), false, nil},
		{"this process's own: reused or replaced", recorded(1, true, run, self), rf(3), false, nil},
		{"another run in progress, even one that fits: refused", recorded(3, true, run, 4242), rf(1), false,
			[]string{"started by a run in progress (pid 4242)) is in use", "--local-port", "--replace"}},
		// Releases: a setup naming one takes only a cluster of it; runs
		// that name none take a running cluster of any.
		{"a setup's release, the cluster runs another: refused", recorded(1, true, user, 0),
			with(rf(1), func(n *localNeed) {
				n.exact, n.strict, n.why, n.version, n.release = true, true, `setup "old"`, "3.9.1", "3.9.1"
			}), false,
			[]string{`runs release 4.3.1; setup "old" asks for 3.9.1`, "'brokerbench local up kafka --version 3.9.1 --replace'"}},
		{"--local-version of the running cluster: used as is", recorded(1, true, user, 0),
			with(rf(1), func(n *localNeed) { n.version, n.release = "4.3.1", "4.3.1" }), true, nil},
		{"no release asked, a running cluster of another: used as is", func() local.Status {
			st := recorded(1, true, user, 0)
			st.Version = "3.9.1"
			return st
		}(), rf(1), true, nil},
		{"stopped, of the shape needed but another release: refused", recorded(1, false, user, 0),
			with(rf(1), func(n *localNeed) { n.release = "3.9.1" }), false, []string{"is not the shape these runs would start (1 broker, serving plaintext, release 3.9.1)"}},
		{"another run in progress, --replace: taken over", recorded(3, true, run, 4242), with(rf(1), func(n *localNeed) { n.replace = true }), false, nil},
	} {
		use, err := chooseLocal(tc.st, tc.need)
		switch {
		case len(tc.refused) == 0 && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case len(tc.refused) > 0 && err == nil:
			t.Errorf("%s: not refused (use %v)", tc.name, use)
		case err == nil && use != tc.use:
			t.Errorf("%s: use as is %v, want %v", tc.name, use, tc.use)
		}
		for _, want := range tc.refused {
			if err != nil && !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal lacks %q:\n%v", tc.name, want, err)
			}
		}
	}
}

// TestLocalNeed: without --local-brokers a run needs a cluster of at
// least its replication factor (the workload's, else the driver
// config's); with it, exactly that many, which must hold the replication
// factor; a study setup asks for its shape exactly.
func TestLocalNeed(t *testing.T) {
	dc := &workload.DriverConfig{Name: "kafka", ReplicationFactor: 2}
	for _, tc := range []struct {
		name           string
		brokers, rf    int
		setup          string
		want           int
		exact, strict  bool
		refusedMessage string
	}{
		{"the workload's RF", 0, 3, "", 3, false, false, ""},
		{"the driver config's RF", 0, 0, "", 2, false, false, ""},
		{"--local-brokers", 5, 3, "", 5, true, false, ""},
		{"--local-brokers below the RF", 1, 3, "", 0, false, false, "--local-brokers 1 cannot hold the workload's replication factor 3"},
		{"an RF larger than a local cluster", 0, 12, "", 0, false, false, "a local cluster has at most 9"},
		{"a study setup", 3, 1, "regular", 3, true, true, ""},
	} {
		tgt := newTarget(IO{}, "", LocalOptions{BrokersFlag: "local-brokers"})
		w := &workload.Workload{ReplicationFactor: tc.rf}
		if tc.setup != "" {
			tgt.wantSetup(workload.Setup{Name: tc.setup, Brokers: tc.brokers}, w)
		} else {
			tgt.wantCluster(tc.brokers, nil, w)
		}
		need, err := tgt.need(dc)
		if tc.refusedMessage != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusedMessage) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.refusedMessage)
			}
			continue
		}
		if err != nil || need.brokers != tc.want || need.exact != tc.exact || need.strict != tc.strict || need.kind != "kafka" || need.listener != "plaintext" {
			t.Errorf("%s: %+v, %v; want %d brokers, exact %v, strict %v", tc.name, need, err, tc.want, tc.exact, tc.strict)
		}
	}
}

// TestWithPassword: a local node's metrics endpoint that names the
// secured cluster's user without a password is read with the cluster's
// password; any other is read as given.
func TestWithPassword(t *testing.T) {
	dir := t.TempDir()
	sec := &local.Security{Username: local.Username, PasswordFile: filepath.Join(dir, "password")}
	if err := os.WriteFile(sec.PasswordFile, []byte("p@ss:w/rd"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		sec  *local.Security
		want string
	}{
		// The cluster's user without a password: the password added.
		{"http://brokerbench@127.0.0.1:8161/console/jolokia", sec, "http://brokerbench:p%40ss%3Aw%2Frd@127.0.0.1:8161/console/jolokia"},
		// Unsecured: no password to add.
		{"http://brokerbench@127.0.0.1:8161/console/jolokia", nil, "http://brokerbench@127.0.0.1:8161/console/jolokia"},
		// Without a user, another user, or a password already given.
		{"http://127.0.0.1:7071/metrics", sec, "http://127.0.0.1:7071/metrics"},
		{"http://other@127.0.0.1:8161/console/jolokia", sec, "http://other@127.0.0.1:8161/console/jolokia"},
		{"redis://brokerbench:given@127.0.0.1:6379", sec, "redis://brokerbench:given@127.0.0.1:6379"},
		// The reader finds the password in a file of its own (Mosquitto's
		// $SYS reader, which refuses one in the URL).
		{"mqtt://brokerbench@127.0.0.1:1883?passwordFile=%2Fstate%2Fpassword", sec, "mqtt://brokerbench@127.0.0.1:1883?passwordFile=%2Fstate%2Fpassword"},
		// The password cannot be read: as given.
		{"http://brokerbench@127.0.0.1:8161/console/jolokia", &local.Security{Username: local.Username, PasswordFile: filepath.Join(dir, "none")},
			"http://brokerbench@127.0.0.1:8161/console/jolokia"},
	} {
		if got := withPassword(tc.url, tc.sec); got != tc.want {
			t.Errorf("withPassword(%s, secured %v) = %s, want %s", tc.url, tc.sec != nil, got, tc.want)
		}
	}
}

// TestWorkersNeedCredentials: workers do not get a secured local
// cluster's credentials, so a run spread over them is refused with the
// engine's message, by a run's executor (driverSource) and by a study's
// worker pool alike, when the listener its driver connects to asks for
// them, the plain one included where the kind's does (Mosquitto, NSQ);
// it goes ahead on a listener that asks for none (Kafka's plaintext,
// RabbitMQ's streams) and on a cluster that is not secured.
func TestWorkersNeedCredentials(t *testing.T) {
	props := func(kv ...string) workload.Properties {
		var p workload.Properties
		for i := 0; i < len(kv); i += 2 {
			p = append(p, workload.Property{Key: kv[i], Value: kv[i+1]})
		}
		return p
	}
	const refusal = "workers cannot use the credentials of a secured local cluster yet"
	for _, tc := range []struct {
		name   string
		kind   string
		driver workload.DriverConfig
		// secured: the cluster serves all of the kind's listeners.
		secured bool
		refused bool
	}{
		{"Mosquitto's plain listener asks for the password", "mosquitto", workload.DriverConfig{Name: "mqtt"}, true, true},
		{"Mosquitto's TLS listener", "mosquitto", workload.DriverConfig{Name: "mqtt", Common: props("tls", "true")}, true, true},
		{"an unsecured Mosquitto", "mosquitto", workload.DriverConfig{Name: "mqtt"}, false, false},
		{"NSQ's HTTP API asks for TLS and a certificate", "nsq", workload.DriverConfig{Name: "nsq"}, true, true},
		{"Kafka's plaintext listener is open", "kafka", workload.DriverConfig{Name: "kafka"}, true, false},
		{"Kafka's SASL_SSL listener", "kafka", workload.DriverConfig{Name: "kafka", Common: props("security.protocol", "SASL_SSL")}, true, true},
		{"RabbitMQ's plain stream listener is open", "rabbitmq", workload.DriverConfig{Name: "rabbitmq-stream"}, true, false},
		{"RabbitMQ's stream listener over TLS", "rabbitmq", workload.DriverConfig{Name: "rabbitmq-stream", Common: props("tls", "true")}, true, true},
	} {
		c, err := brokers.NewLocal(tc.kind, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		c.StateDir = t.TempDir()
		if tc.secured {
			c.Listeners = c.Kind.(local.Securer).Listeners()
		}
		// The target as driverOptions leaves it on that cluster: the
		// driver given the cluster's credentials when it has some.
		tgt := newTarget(IO{}, "", LocalOptions{})
		tgt.cluster = c
		tgt.connected = driver.Options{Endpoints: []string{"127.0.0.1:1"}}
		if sec := c.Security(); sec != nil {
			tgt.connected.Credentials = &driver.Credentials{CAFile: sec.CAFile, CertFile: sec.ClientKeyStore, KeyFile: sec.ClientKeyStore, Username: sec.Username, Password: "unused"}
		}
		dc := tc.driver
		dc.Source = tc.name
		_, runErr := driverSource(&dc, "", "", &workload.Workload{}, tgt.connected, tgt.needsCredentials(&dc))
		// A pool that has its workers already: nothing is started.
		pool := localWorkerPool{2: &distributed.LocalWorkers{}}
		_, studyErr := pool.runner(2, &dc, tgt)
		for caller, err := range map[string]error{"run": runErr, "study": studyErr} {
			if tc.refused && (err == nil || !strings.Contains(err.Error(), refusal)) {
				t.Errorf("%s: %s: %v, want %q", tc.name, caller, err, refusal)
			}
			if !tc.refused && err != nil {
				t.Errorf("%s: %s: %v, want no refusal", tc.name, caller, err)
			}
		}
	}
}
