package kafka

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/local"
)

// kafkaJMXSeries are the series brokerbench reads of a Kafka broker, each
// with the MBean Kafka serves it from (its object name as Kafka registers
// it, keys in that order, a request version as clients use it) and the
// attribute.
var kafkaJMXSeries = []struct{ series, bean, attr string }{
	{"kafka_server_messagesin_total", "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec", "Count"},
	{"kafka_server_bytesin_total", "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count"},
	{"kafka_server_bytesout_total", "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec", "Count"},
	{"kafka_server_replicamanager_isrshrinks_total", "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "Count"},
	{"kafka_server_replicamanager_isrexpands_total", "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec", "Count"},
	{"kafka_server_replicamanager_underreplicatedpartitions", "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value"},
	{"kafka_server_replicamanager_underminisrpartitioncount", "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value"},
	{"kafka_server_replicamanager_offlinereplicacount", "kafka.server:type=ReplicaManager,name=OfflineReplicaCount", "Value"},
	{"kafka_server_replicamanager_leadercount", "kafka.server:type=ReplicaManager,name=LeaderCount", "Value"},
	{"kafka_server_replicamanager_partitioncount", "kafka.server:type=ReplicaManager,name=PartitionCount", "Value"},
	{`kafka_network_requests_total{request="Produce"}`, "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=11", "Count"},
	{`kafka_network_requests_total{request="Fetch"}`, "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=17", "Count"},
	{`kafka_network_requests_total{request="FetchConsumer"}`, "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchConsumer,version=17", "Count"},
	{`kafka_network_request_total_time_ms_p99{request="Produce"}`, "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile"},
	{`kafka_network_request_total_time_ms_p99{request="Fetch"}`, "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch", "99thPercentile"},
	{`kafka_network_request_total_time_ms_p99{request="FetchConsumer"}`, "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchConsumer", "99thPercentile"},
	{"kafka_log_flushes_total", "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "Count"},
	{"kafka_log_flush_time_ms_p99", "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs", "99thPercentile"},
	{"kafka_controller_activecontrollercount", "kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value"},
	{"kafka_controller_offlinepartitionscount", "kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value"},
}

// jmxConfig is what the test reads of the exporter's config.
type jmxConfig struct {
	LowercaseOutputName bool                `yaml:"lowercaseOutputName"`
	Include             []string            `yaml:"includeObjectNames"`
	Exclude             map[string][]string `yaml:"excludeObjectNameAttributes"`
	Rules               []struct {
		Pattern string            `yaml:"pattern"`
		Name    string            `yaml:"name"`
		Labels  map[string]string `yaml:"labels"`
		Type    string            `yaml:"type"`
	} `yaml:"rules"`
}

// objectName is a JMX object name or pattern: its domain and key
// properties in order, and whether it ends in ",*" (other keys allowed).
type objectName struct {
	domain string
	keys   [][2]string
	more   bool
}

func parseObjectName(t *testing.T, s string) objectName {
	t.Helper()
	domain, props, ok := strings.Cut(s, ":")
	if !ok || props == "" {
		t.Fatalf("object name %q: no key properties", s)
	}
	o := objectName{domain: domain}
	for _, p := range strings.Split(props, ",") {
		if p == "*" {
			o.more = true
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			t.Fatalf("object name %q: property %q has no value", s, p)
		}
		o.keys = append(o.keys, [2]string{k, v})
	}
	return o
}

func (o objectName) value(key string) (string, bool) {
	for _, kv := range o.keys {
		if kv[0] == key {
			return kv[1], true
		}
	}
	return "", false
}

// matches reports whether the pattern o (a value "*" matches any value)
// matches the object name n, as the MBean server does for the exporter's
// includeObjectNames; without patterns it is the names' equality.
func (o objectName) matches(n objectName) bool {
	if o.domain != n.domain || (!o.more && len(o.keys) != len(n.keys)) {
		return false
	}
	for _, kv := range o.keys {
		v, ok := n.value(kv[0])
		if !ok || (kv[1] != "*" && kv[1] != v) {
			return false
		}
	}
	return true
}

// exporterKey is the text the exporter matches its rules' patterns
// against: "domain<key=value, key=value><>attribute".
func (o objectName) exporterKey(attr string) string {
	var props []string
	for _, kv := range o.keys {
		props = append(props, kv[0]+"="+kv[1])
	}
	return o.domain + "<" + strings.Join(props, ", ") + "><>" + attr
}

// served returns the series the exporter's first matching rule makes of
// attribute attr of the MBean bean ("" if no rule matches), as the exporter
// does: the rule's pattern matches anywhere in the key, and the name and
// label values take its groups.
func (c jmxConfig) served(t *testing.T, bean objectName, attr string) string {
	t.Helper()
	key := bean.exporterKey(attr)
	for _, r := range c.Rules {
		re, err := regexp.Compile("^.*(?:" + r.Pattern + ").*$")
		if err != nil {
			t.Fatalf("rule %q: %v", r.Pattern, err)
		}
		m := re.FindStringSubmatchIndex(key)
		if m == nil {
			continue
		}
		name := string(re.ExpandString(nil, javaGroups(r.Name), key, m))
		if c.LowercaseOutputName {
			name = strings.ToLower(name)
		}
		var labels []string
		for k, v := range r.Labels {
			labels = append(labels, k+`="`+string(re.ExpandString(nil, javaGroups(v), key, m))+`"`)
		}
		if len(labels) == 0 {
			return name
		}
		slices.Sort(labels)
		return name + "{" + strings.Join(labels, ",") + "}"
	}
	return ""
}

// javaGroups writes Java's group references ($1, digits only) as Go's
// (${1}): in Go "$1_total" names a group "1_total".
func javaGroups(template string) string {
	return regexp.MustCompile(`\$(\d+)`).ReplaceAllString(template, "$${${1}}")
}

func readJMXConfig(t *testing.T) jmxConfig {
	t.Helper()
	var c jmxConfig
	if err := yaml.Unmarshal([]byte(kafkaJMXRules), &c); err != nil {
		t.Fatalf("the exporter config is not YAML: %v", err)
	}
	return c
}

// TestKafkaJMXConfigServesWhatIsRead plays the exporter on the config
// local Kafka brokers run with: every series brokerbench reads comes from
// an MBean the exporter walks, of an attribute not left out, through a
// rule that names it so; every Kafka series reports chart is one of them;
// and nothing is walked or kept that no series needs (each costs the
// broker CPU at every read).
func TestKafkaJMXConfigServesWhatIsRead(t *testing.T) {
	c := readJMXConfig(t)
	var includes []objectName
	for _, s := range c.Include {
		includes = append(includes, parseObjectName(t, s))
	}
	usedInclude := make([]bool, len(includes))
	usedRule := map[string]bool{}
	read := map[string]bool{}
	for _, s := range kafkaJMXSeries {
		bean := parseObjectName(t, s.bean)
		read[s.series] = true
		walked := false
		for i, inc := range includes {
			if inc.matches(bean) {
				walked, usedInclude[i] = true, true
			}
		}
		if !walked {
			t.Errorf("%s: its MBean %s is in no includeObjectNames entry: the exporter never reads it", s.series, s.bean)
		}
		for name, attrs := range c.Exclude {
			if parseObjectName(t, name).matches(bean) && slices.Contains(attrs, s.attr) {
				t.Errorf("%s: attribute %s of %s is excluded (excludeObjectNameAttributes)", s.series, s.attr, s.bean)
			}
		}
		if got := c.served(t, bean, s.attr); got != s.series {
			t.Errorf("%s<>%s is served as %q, want %q", s.bean, s.attr, got, s.series)
		}
		for _, r := range c.Rules {
			if regexp.MustCompile("^.*(?:" + r.Pattern + ").*$").MatchString(bean.exporterKey(s.attr)) {
				usedRule[r.Pattern] = true
				break
			}
		}
	}
	for i, inc := range c.Include {
		if !usedInclude[i] {
			t.Errorf("includeObjectNames %q: no series read comes from it, yet every read walks it", inc)
		}
		// A pattern walks every MBean it matches. Kafka registers one
		// per request version clients use, all read; any other pattern
		// walks MBeans no series comes from.
		for _, kv := range includes[i].keys {
			if kv[1] == "*" && kv[0] != "version" {
				t.Errorf("includeObjectNames %q: the pattern %s=* walks every MBean of that name; name the ones read", inc, kv[0])
			}
		}
		if includes[i].more {
			t.Errorf("includeObjectNames %q: the pattern ,* walks every MBean with more keys; name the ones read", inc)
		}
	}
	// Every percentile of a histogram is a sort of its samples at each
	// read: those no series reads are excluded.
	percentiles := []string{"50thPercentile", "75thPercentile", "95thPercentile", "98thPercentile", "99thPercentile", "999thPercentile"}
	readAttrs := map[string][]string{}
	for _, s := range kafkaJMXSeries {
		readAttrs[s.bean] = append(readAttrs[s.bean], s.attr)
	}
	for bean, attrs := range readAttrs {
		if !slices.ContainsFunc(attrs, func(a string) bool { return slices.Contains(percentiles, a) }) {
			continue
		}
		for _, p := range percentiles {
			if !slices.Contains(attrs, p) && !slices.Contains(c.Exclude[bean], p) {
				t.Errorf("%s: its %s is read at every read, and no series needs it: add it to excludeObjectNameAttributes", bean, p)
			}
		}
	}
	for _, r := range c.Rules {
		if !usedRule[r.Pattern] {
			t.Errorf("rule %q makes no series brokerbench reads", r.Pattern)
		}
	}
	for name := range c.Exclude {
		n := parseObjectName(t, name)
		if !slices.ContainsFunc(includes, func(inc objectName) bool { return inc.matches(n) }) {
			t.Errorf("excludeObjectNameAttributes %q: not an MBean the exporter walks", name)
		}
	}

	// Every Kafka series a report charts is read: a counter's chart is
	// its rate.
	charted := map[string]bool{}
	for s := range read {
		name, _, _ := strings.Cut(s, "{")
		if base, ok := strings.CutSuffix(name, "_total"); ok {
			name = base + "_per_second"
		}
		charted[name] = true
	}
	for _, h := range brokermetrics.Headlines() {
		if strings.HasPrefix(h, "kafka_") && !charted[h] {
			t.Errorf("reports chart %s, which the exporter config does not serve", h)
		}
	}
}

// TestKafkaCommandFiltersExporter: the broker's exporter serves only the
// broker's series (its JVM collectors cost a read CPU for series nobody
// reads), and a controller without a metrics port runs no exporter.
func TestKafkaCommandFiltersExporter(t *testing.T) {
	c := NewLocal(29092, 1)
	c.StateDir = t.TempDir()
	broker := &local.Node{ID: 1, Roles: []string{"broker"}, Host: "127.0.0.1", Ports: map[string]int{"metrics": 7071}, Dir: c.StateDir}
	argv := Kind{}.Command(c, broker)
	if !slices.Contains(argv, kafkaJMXFilter) || !strings.HasPrefix(argv[1], "-javaagent:") {
		t.Errorf("broker command %q: want the exporter agent and %s before the class", argv, kafkaJMXFilter)
	}
	controller := &local.Node{ID: 101, Roles: []string{"controller"}, Host: "127.0.2.1", Ports: map[string]int{"controller": 9093}, Dir: c.StateDir}
	if argv := (Kind{}).Command(c, controller); slices.Contains(argv, kafkaJMXFilter) {
		t.Errorf("controller command %q: no exporter, so no exporter option", argv)
	}
}
