package nsq

import (
	"context"
	endian "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSecurity starts a secured nsqd (its TCP port on 29160), as 'local
// up nsq --security plain,tls' does: a driver asking for TLS, given its
// HTTPS API, trusting its authority and presenting the cluster's client
// certificate, produces and consumes over TLS; a client without a
// certificate, and a plain one, are refused, each told what to do, on
// the HTTP API and on the TCP port alike. A driver asking for TLS of the
// plain test nsqd, which answers in plain text, is refused rather than
// carried on without it.
func TestSecurity(t *testing.T) {
	testbroker.Need(t, "a secured local nsqd (the Go toolchain)")
	b, err := testbroker.StartLocal("nsq", 29160, func(c *local.Cluster) { c.Listeners = []string{"plain", "tls"} })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	st := c.Status()
	sec := st.Security
	if sec == nil {
		t.Fatalf("status %+v: not secured", st)
	}
	creds := &driver.Credentials{CAFile: sec.CAFile, CertFile: sec.ClientKeyStore, KeyFile: sec.ClientKeyStore}
	tlsOn := workload.Properties{{Key: "tls", Value: "true"}}
	connect := func(t *testing.T, common workload.Properties, creds *driver.Credentials, endpoints ...string) *Driver {
		t.Helper()
		d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test", Common: common}, driver.Options{Endpoints: endpoints, Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d.(*Driver)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tcpAddr := st.Bootstrap[0]

	t.Run("TLS with the client certificate", func(t *testing.T) {
		d := connect(t, tlsOn, creds, LocalKind.Endpoints(st, localListener(&workload.DriverConfig{Common: tlsOn}))...)
		if v, err := d.BrokerVersion(ctx); err != nil || v != "NSQ "+Version {
			t.Fatalf("over HTTPS: BrokerVersion = %q, %v", v, err)
		}
		const topic = "bb-tls"
		if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		got := newReceived()
		cons, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "all"}, got.consume)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		if err := cons.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		acks := &acked{}
		p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxInFlight: 100}, acks.ack)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := range 100 {
			p.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "a-%d", i)})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, failed := acks.counts(); ok != 100 || failed != 0 {
			t.Fatalf("over TLS: %d acknowledged and %d failed of 100", ok, failed)
		}
		got.wait(t, ctx, "a", 100)
	})

	// The driver reaches the TCP port only once the HTTP API told it
	// where: these set it, to try the TCP port on its own.
	tcpDirect := func(d *Driver) *Driver {
		d.nodes[0].tcpAddr = tcpAddr
		return d
	}
	httpsAddr := c.Nodes()[0].Addr(httpsPort)

	t.Run("no client certificate", func(t *testing.T) {
		d := connect(t, workload.Properties{{Key: "tls", Value: "true"}, {Key: "tlsTrustStore", Value: sec.CAFile}}, nil, httpsAddr)
		if _, err := d.BrokerVersion(ctx); !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "tlsKeyStore") {
			t.Errorf("HTTPS without a client certificate: %v; want a refusal naming tlsKeyStore", err)
		}
		if p, err := tcpDirect(d).NewProducer(ctx, driver.ProducerSpec{Topic: "bb-tls", MaxInFlight: 1}, (&acked{}).ack); err == nil {
			p.Close()
			t.Error("the TCP port took a TLS client without a certificate")
		} else if !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "tlsKeyStore") {
			t.Errorf("TCP without a client certificate: %v; want a refusal naming tlsKeyStore", err)
		}
	})

	t.Run("plain", func(t *testing.T) {
		d := connect(t, nil, creds, c.Nodes()[0].Addr("http"))
		if _, err := d.BrokerVersion(ctx); !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "set tls: true") ||
			!strings.Contains(err.Error(), fmt.Sprint(c.Nodes()[0].Ports[httpsPort])) {
			t.Errorf("plain HTTP: %v; want a refusal that says to set tls: true and names the HTTPS port", err)
		}
		// go-nsq's producer panics on the error nsqd answers a plain
		// connection's first command with: the TCP port is tried by hand.
		conn, err := net.DialTimeout("tcp", tcpAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		body := []byte("plain")
		cmd := append([]byte("  V2PUB bb-tls\n"), byte(0), byte(0), byte(0), byte(len(body)))
		if _, err := conn.Write(append(cmd, body...)); err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, 8)
		if _, err := io.ReadFull(conn, frame); err != nil {
			t.Fatalf("no answer to a plain PUB: %v", err)
		}
		data := make([]byte, min(endian.BigEndian.Uint32(frame)-4, 1024))
		_, _ = io.ReadFull(conn, data)
		if typ := endian.BigEndian.Uint32(frame[4:]); typ != 1 || !strings.Contains(string(data), "TLS required") {
			t.Errorf("a plain PUB on the TCP port: frame type %d, %q; want nsqd's error that TLS is required", typ, data)
		}
	})

	// A driver without TLS is refused before it connects to an nsqd
	// whose TCP port alone requires TLS (--tls-required=tcp-https),
	// whose HTTP API answers in plain text: this one's HTTP API is a
	// stand-in.
	t.Run("plain to a TCP port that requires TLS", func(t *testing.T) {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/info":
				fmt.Fprintf(w, `{"version":%q,"tcp_port":%s}`, Version, strings.Split(tcpAddr, ":")[1])
			case "/config/tls_required":
				fmt.Fprint(w, "1")
			default:
				http.NotFound(w, r)
			}
		}))
		defer api.Close()
		d := connect(t, nil, nil, api.Listener.Addr().String())
		if p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: "bb-tls", MaxInFlight: 1}, (&acked{}).ack); err == nil {
			p.Close()
			t.Error("a plain producer connected to a TCP port that requires TLS")
		} else if !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "set tls: true") {
			t.Errorf("plain to a TCP port that requires TLS: %v; want a refusal that says to set tls: true", err)
		}
	})

	t.Run("TLS asked of a plain nsqd", func(t *testing.T) {
		plain := server.Get(t).Cluster.Nodes()[0]
		d := connect(t, workload.Properties{{Key: "tls", Value: "true"}, {Key: "tlsTrustStore", Value: sec.CAFile}}, nil, plain.Addr("http"))
		d.nodes[0].tcpAddr = plain.Addr("client")
		if p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: "bb-tls", MaxInFlight: 1}, (&acked{}).ack); err == nil {
			p.Close()
			t.Error("a producer asking for TLS carried on in plain text")
		} else if !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "did not take TLS") {
			t.Errorf("TLS asked of a plain nsqd: %v; want a refusal saying it did not take TLS", err)
		}
	})
}
