package artemis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDiskLimit: the disk limit "artemis create" writes (90% used) is
// replaced by 1 GB free, once, however many times the node is configured.
func TestDiskLimit(t *testing.T) {
	created := "<core>\n      <max-disk-usage>90</max-disk-usage>\n      <journal-type>NIO</journal-type>\n</core>\n"
	once := string(diskLimit([]byte(created)))
	twice := string(diskLimit([]byte(once)))
	if once != twice {
		t.Errorf("configured twice differs:\n%s\n%s", once, twice)
	}
	for _, want := range []string{"<max-disk-usage>100</max-disk-usage>", "<min-disk-free>1GB</min-disk-free>", "<journal-type>NIO</journal-type>"} {
		if strings.Count(twice, want) != 1 {
			t.Errorf("broker.xml has %q %d times, want once:\n%s", want, strings.Count(twice, want), twice)
		}
	}
	if strings.Contains(twice, ">90<") {
		t.Errorf("the 90%% limit is still there:\n%s", twice)
	}
}

// created is the part of the broker.xml "artemis create" writes that
// brokerbench replaces.
const created = `<configuration><core>
      <max-disk-usage>90</max-disk-usage>
      <acceptors>
         <acceptor name="artemis">tcp://127.0.1.2:61616?protocols=CORE,AMQP,STOMP,HORNETQ,MQTT,OPENWIRE</acceptor>
         <acceptor name="amqp">tcp://127.0.1.2:5672?protocols=AMQP</acceptor>
      </acceptors>
      <security-settings/>
      <address-settings>
         <address-setting match="activemq.management#">
            <auto-create-queues>true</auto-create-queues>
         </address-setting>
         <address-setting match="#">
            <dead-letter-address>DLQ</dead-letter-address>
         </address-setting>
      </address-settings>
</core></configuration>
`

// TestLocalCluster: three brokers are node i on 127.0.1.i, each with
// its client port and one for the other nodes; node 2's broker.xml has
// an acceptor of the core protocol alone for them, a connector to every
// node, a cluster connection to the two others (not itself) that
// forwards on demand over one hop, the cluster's user and password,
// redistribution without delay and the disk limit, and writing it again
// changes nothing.
func TestLocalCluster(t *testing.T) {
	c := NewLocal(61616, 3)
	c.StateDir = t.TempDir()
	if c.HeapMB != 512 {
		t.Errorf("heap %d MB, want 512 for each broker of a cluster", c.HeapMB)
	}
	nodes := Kind{}.Layout(c)
	var hosts []string
	for _, n := range nodes {
		hosts = append(hosts, fmt.Sprintf("%d:%s:%s", n.ID, strings.Join(n.Roles, "+"), n.Host))
		if _, ok := n.Ports["cluster"]; !ok {
			t.Errorf("node %d has no port for the other nodes: %v", n.ID, n.Ports)
		}
		n.Ports = map[string]int{"client": 61616, "cluster": 40000 + n.ID}
	}
	if want := []string{"1:broker:127.0.1.1", "2:broker:127.0.1.2", "3:broker:127.0.1.3"}; !slices.Equal(hosts, want) {
		t.Fatalf("layout %v, want %v", hosts, want)
	}
	once := string(brokerSettings(c, nodes, nodes[1], "pa<ss", []byte(created)))
	if twice := string(brokerSettings(c, nodes, nodes[1], "pa<ss", []byte(once))); twice != once {
		t.Errorf("written twice differs:\n%s\n%s", once, twice)
	}
	for _, want := range []string{
		`<acceptor name="plain">tcp://127.0.1.2:61616?`,
		`<acceptor name="cluster">tcp://127.0.1.2:40002?tcpSendBufferSize=1048576;tcpReceiveBufferSize=1048576;protocols=CORE;useEpoll=true</acceptor>`,
		`<connector name="node-1">tcp://127.0.1.1:40001</connector>`,
		`<connector name="node-2">tcp://127.0.1.2:40002</connector>`,
		`<connector name="node-3">tcp://127.0.1.3:40003</connector>`,
		"<cluster-user>brokerbench-cluster</cluster-user>",
		"<cluster-password>pa&lt;ss</cluster-password>",
		"<connector-ref>node-2</connector-ref>\n            <message-load-balancing>ON_DEMAND</message-load-balancing>\n            <max-hops>1</max-hops>",
		"<static-connectors>\n               <connector-ref>node-1</connector-ref>\n               <connector-ref>node-3</connector-ref>\n            </static-connectors>",
		"<address-setting match=\"#\">\n            <redistribution-delay>0</redistribution-delay>\n            <dead-letter-address>",
		"<min-disk-free>1GB</min-disk-free>",
	} {
		if strings.Count(once, want) != 1 {
			t.Errorf("node 2's broker.xml has %q %d times, want once:\n%s", want, strings.Count(once, want), once)
		}
	}
	for _, gone := range []string{`name="artemis"`, `name="amqp"`, "STOMP"} {
		if strings.Contains(once, gone) {
			t.Errorf("node 2's broker.xml still has %q:\n%s", gone, once)
		}
	}
}

// TestLocalBroker: one broker is node 1 on 127.0.0.1 with its client
// port and its web console's alone, and its broker.xml has neither a
// cluster connection nor redistribution.
func TestLocalBroker(t *testing.T) {
	c := NewLocal(61616, 1)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	if len(nodes) != 1 || nodes[0].Host != "127.0.0.1" || len(nodes[0].Ports) != 2 || c.HeapMB != 1024 {
		t.Fatalf("one broker: %d nodes, the first %+v, heap %d MB; want one on 127.0.0.1 with its client and console ports, 1024 MB", len(nodes), nodes[0], c.HeapMB)
	}
	if _, ok := nodes[0].Ports["http"]; !ok {
		t.Errorf("one broker has no port for its web console: %v", nodes[0].Ports)
	}
	nodes[0].Ports["client"] = 61616
	got := string(brokerSettings(c, nodes, nodes[0], "", []byte(created)))
	for _, absent := range []string{"cluster", "connector", "redistribution"} {
		if strings.Contains(got, absent) {
			t.Errorf("one broker's broker.xml has %q:\n%s", absent, got)
		}
	}
}

// createdBootstrap is the bootstrap.xml "artemis create" writes, with
// its web console on 8161.
const createdBootstrap = `<broker xmlns="http://activemq.apache.org/schema">

   <jaas-security domain="activemq"/>

   <!-- artemis.URI.instance is parsed from artemis.instance by the CLI startup.
        This is to avoid situations where you could have spaces or special characters on this URI -->
   <server configuration="file:/x/etc//broker.xml"/>

   <!-- The web server is only bound to localhost by default -->
   <web path="web" rootRedirectLocation="console">
       <binding name="artemis" uri="http://127.0.1.2:8161">
           <app name="console" url="console" war="console.war"/>
       </binding>
   </web>


</broker>
`

// TestWebConsole: the web console "artemis create" writes, or its
// absence (an instance made without it), becomes one console on the
// node's "http" port, the same when written again; a node laid out
// without that port has none.
func TestWebConsole(t *testing.T) {
	n := Kind{}.Layout(NewLocal(61616, 3))[1]
	if _, ok := n.Ports["http"]; !ok {
		t.Fatalf("node 2 has no port for its web console: %v", n.Ports)
	}
	n.Ports["http"] = 40123
	withoutWeb := webRE.ReplaceAllString(createdBootstrap, "")
	if strings.Contains(withoutWeb, "<web") || !strings.Contains(withoutWeb, "<server configuration") {
		t.Fatalf("the web console is not taken out alone:\n%s", withoutWeb)
	}
	for name, bootstrap := range map[string]string{"created": createdBootstrap, "created without": withoutWeb} {
		once := string(webConsole(n, []byte(bootstrap)))
		if twice := string(webConsole(n, []byte(once))); twice != once {
			t.Errorf("%s: written twice differs:\n%s\n%s", name, once, twice)
		}
		if strings.Count(once, "<web ") != 1 || !strings.Contains(once, `<binding name="artemis" uri="http://127.0.1.2:40123">`) ||
			!strings.Contains(once, `<app name="console" url="console" war="console.war"/>`) || !strings.HasSuffix(once, "</web>\n\n</broker>\n") ||
			!strings.Contains(once, `<server configuration="file:/x/etc//broker.xml"/>`) {
			t.Errorf("%s: not one console on the node's port:\n%s", name, once)
		}
	}
	delete(n.Ports, "http")
	if got := string(webConsole(n, []byte(createdBootstrap))); strings.Contains(got, "<web") {
		t.Errorf("a node without a console port has one:\n%s", got)
	}
}

// TestMetricsURL: a node's metrics are read at its console's Jolokia
// agent, as the cluster's user: unsecured, with a password (the console
// refuses an empty one), secured, without (the cluster's is given
// apart); and nowhere on a node without a console port.
func TestMetricsURL(t *testing.T) {
	c := NewLocal(61616, 1)
	n := Kind{}.Layout(c)[0]
	n.Ports["http"] = 40123
	if got, want := (Kind{}).MetricsURL(c, n), "http://brokerbench:unsecured@127.0.0.1:40123/console/jolokia"; got != want {
		t.Errorf("unsecured: %s, want %s", got, want)
	}
	c.Listeners = []string{"plain", "tls"}
	if got, want := (Kind{}).MetricsURL(c, n), "http://brokerbench@127.0.0.1:40123/console/jolokia"; got != want {
		t.Errorf("secured: %s, want %s", got, want)
	}
	delete(n.Ports, "http")
	if got := (Kind{}).MetricsURL(c, n); got != "" {
		t.Errorf("without a console port: %s", got)
	}
}
