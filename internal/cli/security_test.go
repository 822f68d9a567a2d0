package cli

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/testbroker"
)

// TestSecuredLocalKafka runs against a local Kafka that brokerbench
// secures itself: a run whose driver config asks for SASL_SSL with
// SCRAM-SHA-512 and gives no address or credentials starts a broker
// serving every protocol and takes its credentials; then, as against a
// remote cluster, explicit addresses and credentials: mTLS with a Java
// PKCS12 trust store, SASL_PLAINTEXT with PLAIN and the password from a
// file. A wrong password and an untrusted certificate fail at once with
// advice and exit 1. The cluster's password appears in no output. Runs
// that work may end with a verdict on a rate this machine could not hold
// (see completed): what they show is that messages crossed the secured
// connection, none lost.
func TestSecuredLocalKafka(t *testing.T) {
	testbroker.Need(t, testbroker.Kafka)
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	defer execute("local", "down", "kafka", "--port", "29695")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const workload = "name: secured\ntopics: 1\npartitionsPerTopic: 2\nmessageSize: 100\nrate: 1000\nwarmup: 1s\nduration: 2s\n"
	var printed strings.Builder
	run := func(want int, driverText string, args ...string) (results.Run, string) {
		t.Helper()
		wl := write("wl.yaml", workload+"driver:\n"+driverText)
		out := filepath.Join(dir, "out", strings.ReplaceAll(t.Name(), "/", "_")+time.Now().Format("150405.000000")+".json")
		// Timing is not what this test is about: a busy machine must not
		// fail it with a missed send schedule.
		code, stdout, stderr := execute(append([]string{"run", wl, "--out", out, "--quiet", "--max-send-lag", "500ms"}, args...)...)
		printed.WriteString(stdout + stderr)
		if code != want && !(want == ExitOK && completed(t, code)) {
			t.Fatalf("exit %d, want %d\n%s\n%s", code, want, stdout, stderr)
		}
		if want != ExitOK {
			return results.Run{}, stderr
		}
		res, err := results.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Counts; c.Lost != 0 || c.Acked == 0 || c.Failed != 0 || c.Consumed != c.Acked {
			t.Errorf("accounting %+v", c)
		}
		return *res, stderr
	}

	// The quick workload, its driver swapped for one asking for SASL_SSL
	// with SCRAM-SHA-512 and giving nothing else.
	secured := write("sasl-ssl.yaml", "name: kafka-sasl-ssl\ndriver: kafka\ncommonConfig: {security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512}\n")
	quickOut := filepath.Join(dir, "out", "quick.json")
	code, stdout, stderr := execute("run", "../../workloads/quick.yaml", "--driver", secured, "--local-port", "29695",
		"--warmup", "1s", "--duration", "3s", "--out", quickOut, "--quiet", "--max-send-lag", "500ms")
	printed.WriteString(stdout + stderr)
	if !completed(t, code) {
		t.Fatalf("the quick workload over SASL_SSL: exit %d\n%s\n%s", code, stdout, stderr)
	}
	quick, err := results.Read(quickOut)
	if err != nil {
		t.Fatal(err)
	}
	if p := quick.Driver.Effective["client"].Map()["security.protocol"].Value; p != "SASL_SSL" || quick.Counts.Lost != 0 || quick.Counts.Acked == 0 {
		t.Errorf("the quick workload over SASL_SSL: effective security.protocol %q, accounting %+v", p, quick.Counts)
	}
	st := kafka.NewLocal(29695, 1).Status()
	sec := st.Security
	if sec == nil || !st.Running || len(st.Listeners) != 4 {
		t.Fatalf("the local cluster is not secured and running: %+v", st)
	}
	password, err := sec.Password()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := func(listener string) string { return st.Endpoints(listener)[0] }

	// mTLS on the ssl listener, the authority in a PKCS12 trust store made
	// by Java's keytool when there is one.
	trust, trustType := sec.CAFile, "PEM"
	if keytool, err := exec.LookPath("keytool"); err == nil {
		trust, trustType = filepath.Join(dir, "ca.p12"), "PKCS12"
		if out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", sec.CAFile,
			"-keystore", trust, "-storetype", "PKCS12", "-storepass", "trust-pass-9").CombinedOutput(); err != nil {
			t.Fatalf("keytool: %v\n%s", err, out)
		}
	}
	run(ExitOK, `  driver: kafka
  commonConfig: |
    bootstrap.servers=`+endpoint("ssl")+`
    security.protocol=SSL
    ssl.truststore.location=`+trust+`
    ssl.truststore.type=`+trustType+`
    ssl.truststore.password=trust-pass-9
    ssl.keystore.type=PEM
    ssl.keystore.location=`+sec.ClientKeyStore+"\n")

	// PLAIN over SASL_PLAINTEXT, the password from a file.
	plain := "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + sec.Username + "\" password=\"${file:" + sec.PasswordFile + "}\";"
	run(ExitOK, "  driver: kafka\n  commonConfig: |\n    bootstrap.servers="+endpoint("sasl_plaintext")+"\n    security.protocol=SASL_PLAINTEXT\n    sasl.mechanism=PLAIN\n    sasl.jaas.config="+plain+"\n")

	// A wrong password, and a certificate nobody told brokerbench to trust.
	started := time.Now()
	scram := "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + sec.Username + "\" password=\"not-the-password\";"
	_, stderr = run(ExitRunFailed, "  driver: kafka\n  commonConfig: |\n    bootstrap.servers="+endpoint("sasl_ssl")+"\n    security.protocol=SASL_SSL\n    sasl.mechanism=SCRAM-SHA-512\n    ssl.truststore.type=PEM\n    ssl.truststore.location="+sec.CAFile+"\n    sasl.jaas.config="+scram+"\n")
	if !strings.Contains(stderr, "SASL_AUTHENTICATION_FAILED") || !strings.Contains(stderr, "check the user name and password in sasl.jaas.config") {
		t.Errorf("a wrong password: %s", stderr)
	}
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("a wrong password took %s to report: retried instead of failing", took)
	}
	_, stderr = run(ExitRunFailed, "  driver: kafka\n  commonConfig: |\n    bootstrap.servers="+endpoint("ssl")+"\n    security.protocol=SSL\n")
	if !strings.Contains(stderr, "unknown authority") || !strings.Contains(stderr, "ssl.truststore.location") {
		t.Errorf("an untrusted certificate: %s", stderr)
	}

	// A study against the secured cluster as against a remote one: the
	// password in sasl.jaas.config, read from a file, and a trust store
	// password given as it is. Its index, report and exports show
	// neither.
	jaas := "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + sec.Username + "\" password=\"${file:" + sec.PasswordFile + "}\";"
	study := write("study.yaml", `name: secured-study
workload: {name: w, topics: 1, partitionsPerTopic: 2, messageSize: 100, rate: 1000, warmup: 1s, duration: 2s}
setups:
  - name: sasl-ssl
    driver:
      driver: kafka
      commonConfig: |
        bootstrap.servers=`+endpoint("sasl_ssl")+`
        security.protocol=SASL_SSL
        sasl.mechanism=SCRAM-SHA-512
        sasl.jaas.config=`+jaas+`
        ssl.truststore.location=`+trust+`
        ssl.truststore.type=`+trustType+`
        ssl.truststore.password=trust-pass-9
quick: {warmup: 1s, duration: 2s}
`)
	code, stdout, stderr = execute("study", study, "--scale", "quick", "--out", filepath.Join(dir, "out", "study"))
	printed.WriteString(stdout + stderr)
	if code != ExitOK {
		t.Fatalf("the secured study: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "study", "report.html")); err != nil {
		t.Fatalf("the secured study wrote no report: %v", err)
	}
	check := func(what, text string) {
		for _, s := range []string{password, "trust-pass-9"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q", what, s)
			}
		}
	}
	check("the printed output", printed.String())
	err = filepath.WalkDir(filepath.Join(dir, "out"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		check(path, string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecuredLocalBrokers: the same for Redis (TLS on a port of its own,
// an ACL user), NATS (TLS and a user on the client port, which still takes
// plain clients), RabbitMQ (amqps on a port of its own, a user, and
// EXTERNAL with the client certificate; streams over TLS) and Mosquitto
// (TLS on a port of its own, a user on every listener): a run asking
// for TLS starts the
// secured broker and takes its credentials; with explicit addresses, a
// wrong password and an untrusted certificate fail at once with advice.
// As for Kafka, a working run may end with a verdict on its rate.
func TestSecuredLocalBrokers(t *testing.T) {
	testbroker.Need(t, "local NATS, Redis, RabbitMQ and Mosquitto brokers")
	// One state directory for all: the stream case runs on the RabbitMQ
	// node the AMQP case secured.
	t.Setenv("BROKERBENCH_STATE", filepath.Join(t.TempDir(), "state"))
	for _, down := range [][]string{{"redis", "29697"}, {"nats", "29698"}, {"rabbitmq", "29699"}, {"mosquitto", "29700"}} {
		defer execute("local", "down", down[0], "--port", down[1])
	}
	for _, tc := range []struct {
		kind, port, listener string
		// metric is a broker series that counts the messages in, read
		// from the broker during runs on the local target.
		metric string
		// local is the driver config of runs on the local broker; it
		// asks for TLS.
		local string
		// explicit is a driver config reaching addr with TLS, trusting
		// trust (none if empty), as user with password.
		explicit func(addr, trust, user, password string) string
	}{
		{"redis", "29697", "tls", "redis_commands_per_second", "  driver: redis\n  commonConfig: {tls: \"true\"}\n", func(addr, trust, user, password string) string {
			return "  driver: redis\n  commonConfig: {addr: \"" + addr + "\", tls: \"true\", tlsTrustStore: \"" + trust + "\", username: " + user + ", password: \"" + password + "\"}\n"
		}},
		{"nats", "29698", "tls", "nats_messages_in_per_second", "  driver: nats\n  commonConfig: {tls: \"true\"}\n", func(addr, trust, user, password string) string {
			return "  driver: nats\n  commonConfig: {servers: \"tls://" + addr + "\", tlsTrustStore: \"" + trust + "\", user: " + user + ", password: \"" + password + "\"}\n"
		}},
		{"rabbitmq", "29699", "amqps", "rabbitmq_global_messages_received_per_second", "  driver: rabbitmq\n  commonConfig: {tls: \"true\", saslMechanism: EXTERNAL}\n", func(addr, trust, user, password string) string {
			return "  driver: rabbitmq\n  commonConfig: {amqpUris: \"amqps://" + user + ":" + password + "@" + addr + "/\", tlsTrustStore: \"" + trust + "\"}\n"
		}},
		{"rabbitmq", "29699", "stream_tls", "rabbitmq_global_messages_received_per_second", "  driver: rabbitmq-stream\n  commonConfig: {tls: \"true\"}\n  producerConfig: {batchPublishingDelayMs: \"1\"}\n", func(addr, trust, user, password string) string {
			return "  driver: rabbitmq-stream\n  commonConfig: {uris: \"rabbitmq-stream+tls://" + user + ":" + password + "@" + addr + "/%2f\", tlsTrustStore: \"" + trust + "\"}\n"
		}},
		{"mosquitto", "29700", "tls", "mqtt_publish_in_per_second", "  driver: mqtt\n  commonConfig: {tls: \"true\"}\n", func(addr, trust, user, password string) string {
			return "  driver: mqtt\n  commonConfig: {serverUri: \"mqtts://" + addr + "\", tlsTrustStore: \"" + trust + "\", username: " + user + ", password: \"" + password + "\"}\n"
		}},
	} {
		t.Run(tc.kind+"-"+tc.listener, func(t *testing.T) {
			dir := t.TempDir()
			partitions := "2"
			if tc.kind == "mosquitto" {
				partitions = "1" // MQTT topics have none
			}
			wlText := "name: secured\ntopics: 1\npartitionsPerTopic: " + partitions + "\nmessageSize: 100\nrate: 1000\nwarmup: 1s\nduration: 2s\ndriver:\n"
			run := func(want int, driverText string, args ...string) string {
				t.Helper()
				wl := filepath.Join(dir, "wl.yaml")
				if err := os.WriteFile(wl, []byte(wlText+driverText), 0o600); err != nil {
					t.Fatal(err)
				}
				code, stdout, stderr := execute(append([]string{"run", wl, "--out", filepath.Join(dir, "r.json"), "--quiet", "--max-send-lag", "500ms"}, args...)...)
				if code != want && !(want == ExitOK && completed(t, code)) {
					t.Fatalf("exit %d, want %d\n%s\n%s", code, want, stdout, stderr)
				}
				return stdout + stderr
			}
			printed := run(ExitOK, tc.local, "--local-port", tc.port)
			res, err := results.Read(filepath.Join(dir, "r.json"))
			if err != nil {
				t.Fatal(err)
			}
			if c := res.Counts; c.Lost != 0 || c.Acked == 0 {
				t.Errorf("accounting over TLS: %+v", c)
			}
			// The broker's own count, read over TLS, shows the messages
			// coming in: at its highest, at least half the highest rate
			// acknowledged in an interval, whatever rate this machine
			// managed. RabbitMQ updates its counters every few seconds,
			// later on a busy machine: every interval of the run counts,
			// the drain's too.
			seen, acked := 0.0, 0.0
			for _, iv := range res.Intervals {
				if iv.System == nil {
					continue
				}
				if iv.Phase == results.Measure {
					acked = max(acked, iv.PublishRate)
				}
				for k, v := range iv.System.Broker {
					if strings.HasPrefix(k, tc.metric) {
						seen = max(seen, v)
					}
				}
			}
			if acked == 0 || seen < acked/2 {
				t.Errorf("broker metrics: %s at most %v/s, while up to %.0f msg/s were acknowledged", tc.metric, seen, acked)
			}
			port, _ := strconv.Atoi(tc.port)
			cluster, err := brokers.NewLocal(tc.kind, port, 1)
			if err != nil {
				t.Fatal(err)
			}
			status := cluster.Status()
			if status.Security == nil || len(status.Endpoints(tc.listener)) == 0 {
				t.Fatalf("the local %s is not secured: %+v", tc.kind, status)
			}
			addr, sec := status.Endpoints(tc.listener)[0], status.Security
			password, err := sec.Password()
			if err != nil {
				t.Fatal(err)
			}
			fromFile := "${file:" + sec.PasswordFile + "}"
			printed += run(ExitOK, tc.explicit(addr, sec.CAFile, sec.Username, fromFile))
			out := run(ExitRunFailed, tc.explicit(addr, sec.CAFile, sec.Username, "not-the-password"))
			if !strings.Contains(out, "check the user") {
				t.Errorf("a wrong password:\n%s", out)
			}
			out = run(ExitRunFailed, tc.explicit(addr, "", sec.Username, fromFile))
			if !strings.Contains(out, "unknown authority") || !strings.Contains(out, "tlsTrustStore") {
				t.Errorf("an untrusted certificate:\n%s", out)
			}
			if strings.Contains(printed+out, password) {
				t.Error("the output shows the broker's password")
			}
		})
	}
}
