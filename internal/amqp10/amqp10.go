// Package amqp10 is the AMQP 1.0 client side that brokerbench's drivers
// of AMQP 1.0 brokers share, on go-amqp: connections (Broker), to the
// first of a cluster's nodes that answers (ConnectFrom), producers that
// send on one sender link, acknowledge a message once the broker settled
// it and connect to the next node once their connection is lost, and
// consumers that receive on one receiver link and accept
// a message once the runner consumed it. What a broker names its
// addresses, and how its topics and queues are made, is its driver's
// (ActiveMQ Artemis: package brokers/artemis; RabbitMQ's AMQP 1.0
// plugin: package brokers/rabbitmq/amqp10).
package amqp10

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// Broker is where an AMQP 1.0 broker listens and how a client logs in.
// It is not changed after its first use, and is then safe for
// concurrent use.
type Broker struct {
	// Addr is the broker's host:port.
	Addr string
	// TLS, when not nil, has connections made over TLS.
	TLS *tls.Config
	// Username and Password log in with SASL PLAIN; without a user (and
	// without External) the client logs in anonymously (SASL ANONYMOUS).
	Username, Password string
	// External logs in with SASL EXTERNAL: the TLS client certificate
	// names the user.
	External bool
	// HostName is the host name the connection's open frame carries
	// (RabbitMQ reads "vhost:NAME" there); empty: Addr's host.
	HostName string
	// Dial opens the TCP connection (driver.Options.Dial).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Connect opens an AMQP connection to the broker. A refused login or
// certificate is a driver.Refused error saying what to check.
func (b *Broker) Connect(ctx context.Context) (*amqp.Conn, error) {
	dial := b.Dial
	if b.TLS != nil {
		dial = driver.DialTLS(dial, b.TLS)
	}
	nc, err := dial(ctx, "tcp", b.Addr)
	if err != nil {
		return nil, fmt.Errorf("AMQP broker at %s: %w (is it running, and is this its AMQP 1.0 listener?)", b.Addr, err)
	}
	host := b.HostName
	if host == "" {
		host, _, _ = net.SplitHostPort(b.Addr)
	}
	o := &amqp.ConnOptions{HostName: host, SASLType: amqp.SASLTypeAnonymous()}
	switch {
	case b.External:
		o.SASLType = amqp.SASLTypeExternal("")
	case b.Username != "":
		o.SASLType = amqp.SASLTypePlain(b.Username, b.Password)
	}
	conn, err := amqp.NewConn(ctx, nc, o)
	if err != nil {
		nc.Close()
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Condition == "amqp:unauthorized-access" || isSASLFailure(err) {
			return nil, driver.Refused(fmt.Errorf("AMQP broker at %s: %w: check username and password", b.Addr, err))
		}
		if advice := driver.TLSAdvice(err); advice != "" {
			return nil, driver.Refused(fmt.Errorf("AMQP broker at %s: %w: %s", b.Addr, err, advice))
		}
		if otherProtocol.MatchString(err.Error()) {
			return nil, fmt.Errorf("AMQP broker at %s: %w: %w", b.Addr, ErrOtherProtocol, err)
		}
		return nil, fmt.Errorf("AMQP broker at %s: %w", b.Addr, err)
	}
	return conn, nil
}

// isSASLFailure reports whether err is go-amqp's report of a failed SASL
// exchange (it has no error type of its own for it).
func isSASLFailure(err error) bool {
	return saslFailure.MatchString(err.Error())
}

var saslFailure = regexp.MustCompile(`(?i)sasl|authenticat`)

// ErrOtherProtocol is wrapped by the error of a connection whose server
// answered AMQP 1.0's protocol header with another protocol's (AMQP
// 0-9-1's, for one): a server that does not speak AMQP 1.0 there.
var ErrOtherProtocol = errors.New("the server does not speak AMQP 1.0 on this port")

// otherProtocol matches go-amqp's report of a protocol header that is not
// AMQP 1.0's.
var otherProtocol = regexp.MustCompile(`unexpected protocol`)

// ConnectFrom opens a connection to the first of nodes (the nodes of a
// cluster, or one broker) that answers, trying each once in turn from
// the one at index from (modulo their number), and returns it with the
// index of its node. A refusal of the credentials or certificate ends
// the attempts: the other nodes would refuse them too.
func ConnectFrom(ctx context.Context, nodes []*Broker, from uint64) (*amqp.Conn, uint64, error) {
	n := uint64(len(nodes))
	var errs []error
	for k := range n {
		at := (from + k) % n
		conn, err := nodes[at].Connect(ctx)
		if err == nil || errors.Is(err, driver.ErrRefused) || ctx.Err() != nil {
			return conn, at, err
		}
		errs = append(errs, err)
	}
	return nil, 0, errors.Join(errs...)
}

// Lost reports whether conn has closed (its broker closed it, or went
// away).
func Lost(conn *amqp.Conn) bool {
	select {
	case <-conn.Done():
		return true
	default:
		return false
	}
}
