package mqtt

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// disconnectingServer accepts one MQTT connection on loopback, accepts
// its CONNECT, and answers the packet after it with a DISCONNECT of
// reason 0x81 ("malformed packet"), as Mosquitto did to SUBSCRIBEs split
// over TLS records. It returns the server's address.
func disconnectingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := packets.ReadPacket(conn); err != nil {
			return
		}
		ack := packets.NewControlPacket(packets.CONNACK)
		if _, err := ack.WriteTo(conn); err != nil {
			return
		}
		if _, err := packets.ReadPacket(conn); err != nil {
			return
		}
		bye := packets.NewControlPacket(packets.DISCONNECT)
		d := bye.Content.(*packets.Disconnect)
		d.ReasonCode, d.Properties.ReasonString = 0x81, "malformed packet"
		_, _ = bye.WriteTo(conn)
		// Keep the connection open: a server that disconnects a client
		// need not close at once, and the client must not wait for it.
		time.Sleep(20 * time.Second)
	}()
	return ln.Addr().String()
}

// TestServerDisconnectEndsAnOperation: a server's DISCONNECT in answer to
// a SUBSCRIBE fails the operation at once with the server's reason; paho
// alone would wait for the SUBACK until the operation's bound (10 s).
func TestServerDisconnectEndsAnOperation(t *testing.T) {
	addr := disconnectingServer(t)
	d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "test"}, driver.Options{Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	_, err = d.BrokerVersion(context.Background())
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "disconnected the client (reason 0x81: malformed packet)") {
		t.Fatalf("BrokerVersion: %v, want the server's DISCONNECT and its reason", err)
	}
	if took > 5*time.Second {
		t.Errorf("the error came after %s, not at the DISCONNECT", took)
	}
}
