// Package driver defines what brokerbench needs from a message broker: the
// contract every broker's driver implements. The runner works only through
// these interfaces and never names a broker. The drivers themselves, and
// the registry that finds one by name, are package brokers'.
package driver

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// TopicSpec describes a topic (or queue, or stream) to create.
type TopicSpec struct {
	Name              string
	Partitions        int
	ReplicationFactor int
	// Config holds broker-specific topic settings, passed through unchanged.
	Config workload.Properties
}

// ProducerSpec describes one producer.
type ProducerSpec struct {
	Topic string
	// MaxMessageBytes is the largest value the producer will send; drivers
	// size batches and buffers so that such a message fits.
	MaxMessageBytes int
	// MaxInFlight is the most messages the runner will have in flight on this
	// producer at once; drivers size client buffers so that Send does not
	// block below it.
	MaxInFlight int
	// Transactional asks for a producer that implements Transactor: the
	// runner sends every message inside a transaction. Only drivers
	// whose capabilities declare Transactions are asked.
	Transactional bool
}

// ConsumerSpec describes one consumer.
type ConsumerSpec struct {
	Topic string
	// Subscription names the group of consumers that share the topic's
	// messages; every subscription receives every message.
	Subscription string
	// Start is where a new subscription begins. A driver whose broker
	// cannot replay (Capabilities.Replay false) accepts only StartNew.
	Start StartPosition
	// ReadCommitted asks for a consumer that receives only messages of
	// committed transactions (Kafka's isolation.level=read_committed),
	// never one of an aborted transaction. Only drivers whose
	// capabilities declare Transactions are asked.
	ReadCommitted bool
}

// StartPosition is where a new subscription starts reading.
type StartPosition int

const (
	// StartEarliest reads from the oldest message the topic retains: a
	// topic the run created holds only its own messages, and an existing
	// one (consume-only runs) is read from its beginning.
	StartEarliest StartPosition = iota
	// StartNew reads only messages written after the consumer is ready.
	StartNew
)

// Message is one message a producer sends. Messages are owned by the runner
// and reused: a driver must not touch a Message after calling its AckFunc.
type Message struct {
	Key   []byte
	Value []byte
	// Time is when the runner hands the message to Send, in clock
	// nanoseconds (see package clock). A driver that stamps messages with a
	// creation time uses it rather than reading the clock again.
	Time int64
	// DriverState is reserved for the driver that sends the message: it may
	// keep per-message objects here across reuses so that sending does not
	// allocate. The runner never reads or writes it.
	DriverState any
	// Slot is reserved for the runner. It is the last field so that the
	// runner can keep its own per-message state right after it.
	Slot int
}

// AckFunc is called exactly once for every Message given to Producer.Send,
// with nil if the broker acknowledged it or the reason it failed. It may be
// called from any goroutine, but never concurrently for one producer, and
// must not block.
type AckFunc func(m *Message, err error)

// Delivery is one consumed message. Its Value is valid only during the
// ConsumeFunc call.
type Delivery struct {
	Value []byte
	// Lane is the ordering scope the message was delivered in: the broker
	// keeps each producer's messages in order within a lane (Kafka: the
	// partition; a single queue or stream: 0). NoOrder when the broker
	// promises no order, so none is checked.
	Lane int32
}

// NoOrder is the Lane of a delivery whose broker promises no order.
const NoOrder int32 = -1

// ConsumeFunc is called for every message a consumer receives, serially per
// consumer. It must not retain d or d.Value. It blocks only for the
// processing time a workload gives its consumers
// (consumerProcessingTime): a driver delivers the consumer's next message
// after the call returns, and keeps its connection alive meanwhile, so that
// a slow consumer's backlog grows where the broker holds it.
type ConsumeFunc func(d *Delivery)

// Producer sends messages to one topic.
type Producer interface {
	// Send queues m for asynchronous delivery. The producer's AckFunc is
	// called exactly once for m, also when Send fails immediately. m must not
	// be modified until then.
	Send(ctx context.Context, m *Message)
	// Flush waits until every message sent so far has been acknowledged or
	// failed, or until ctx ends.
	Flush(ctx context.Context) error
	// Close stops the producer; messages still in flight are failed.
	Close()
}

// Transactor is implemented by the producers a driver makes for a
// ProducerSpec with Transactional set. The runner calls its methods from
// the goroutine that calls Send, never concurrently with Send: Begin,
// then Sends, then End, and again.
type Transactor interface {
	// Begin opens a transaction: the messages sent until End belong to
	// it.
	Begin() error
	// End waits until every message of the transaction is acknowledged
	// or failed, then commits the transaction (commit true) or aborts
	// it, and returns once the broker has decided. A nil error means a
	// commit is visible to read-committed consumers, or an abort is
	// final: none of its messages will be. An error means the outcome
	// is unknown, and the producer is ready for Begin again if it can
	// be.
	End(ctx context.Context, commit bool) error
}

// Consumer receives messages from one topic for one subscription until it is
// closed.
type Consumer interface {
	// Ready returns once the consumer is receiving: for group-based brokers,
	// once it has joined its group. It returns ctx's error if ctx ends first.
	Ready(ctx context.Context) error
	// Close stops the consumer; no ConsumeFunc call happens after Close
	// returns.
	Close()
}

// Driver connects to one broker cluster. Its methods are safe for concurrent
// use.
type Driver interface {
	// BrokerVersion describes the broker software, for the results file.
	BrokerVersion(ctx context.Context) (string, error)
	CreateTopic(ctx context.Context, spec TopicSpec) error
	// DeleteTopic deletes a topic; for one that does not exist, its error
	// wraps ErrTopicNotFound.
	DeleteTopic(ctx context.Context, name string) error
	NewProducer(ctx context.Context, spec ProducerSpec, ack AckFunc) (Producer, error)
	NewConsumer(ctx context.Context, spec ConsumerSpec, consume ConsumeFunc) (Consumer, error)
	// EffectiveConfig returns the settings the driver uses, defaults included,
	// for the results file. Secrets must be left out or redacted.
	EffectiveConfig() map[string]workload.Properties
	Close()
}

// SubscriptionWaiter is implemented by drivers whose consumers share work in
// groups that must settle before producing starts (Kafka consumer groups).
type SubscriptionWaiter interface {
	// WaitSubscription returns once the subscription's group has `consumers`
	// members and every partition of topic is assigned to one of them.
	WaitSubscription(ctx context.Context, topic, subscription string, consumers int) error
}

// WrittenCounter is implemented by drivers whose broker can say how many
// messages were ever written to a topic, independently of the producers'
// acknowledgements: the cross-check of the accounting. Brokers whose
// queues shrink as messages are acknowledged cannot say, and leave it out.
type WrittenCounter interface {
	// Written returns the number of messages ever written to a topic that
	// was created empty (Kafka: the sum of the partitions' end offsets;
	// a log-based stream: its last sequence or offset). Retention deleting
	// old messages does not lower it. A replicated broker may count a
	// message only once its replicas hold it, a moment after the
	// acknowledgement; the runner reads it until it settles.
	Written(ctx context.Context, topic string) (int64, error)
}

// Rereader is implemented by drivers that can read again what the broker
// still holds for a subscription once a run is over, so that a message
// the subscription's consumers never received is called lost only when
// the broker is shown not to hold it. A log (Kafka's partitions, a
// stream) is read from its oldest retained message to its end as it was
// when Reread was called. A queue is read without taking its messages:
// it still holds every message no consumer acknowledged, and the
// runner's consumers acknowledge a message only after recording it.
type Rereader interface {
	// Reread calls found with the value of every message the broker
	// holds for the subscription of topic. found is called serially and
	// must not retain value. Reread returns nil only once it read all of
	// them; otherwise an error: ctx's if it ends first, or one wrapping
	// ErrNoReread when the broker, as configured, cannot be read again.
	// The runner closes the run's consumers first, so that a queue
	// holds again what they had taken without acknowledging it.
	Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error
}

// ErrNoReread is wrapped by Rereader.Reread's error when the broker, as
// the driver is configured, cannot be read again: a missing message then
// cannot be proven lost.
var ErrNoReread = errors.New("the broker cannot be read again")

// CheckSpec is what a run will ask of a driver, for Checker.
type CheckSpec struct {
	// MessageSize is the size of every value the producers send.
	MessageSize int
	// ExistingTopics are topics the run uses without creating them.
	ExistingTopics []string
}

// Checker is implemented by drivers that can tell before a run what would
// make every send or every consume fail: a message larger than the
// producer or the broker accepts, an existing topic that is missing.
type Checker interface {
	// Check returns nil if the run can proceed. Problems with the input
	// wrap workload.ErrInvalid and say what to change; a setting the
	// broker does not disclose is not checked.
	Check(ctx context.Context, spec CheckSpec) error
}

// ClusterSizer is implemented by drivers that can tell how many brokers
// the cluster has.
type ClusterSizer interface {
	Brokers(ctx context.Context) (int, error)
}

// Placement is implemented by drivers that can tell which node serves
// what, for faults aimed by role: node ids as the cluster numbers them.
type Placement interface {
	// Leader returns the node leading a topic's partition.
	Leader(ctx context.Context, topic string, partition int) (int, error)
	// Leaders returns the leading node of every partition of a topic, by
	// partition; a partition without a leader has -1.
	Leaders(ctx context.Context, topic string) (map[int]int, error)
	// Controller returns the active controller node.
	Controller(ctx context.Context) (int, error)
}

// HostPlacement is implemented by drivers of brokers that do not number
// their nodes (Pulsar): they name the host that serves what, as the
// brokers advertise it, and a local cluster finds its node on that host.
type HostPlacement interface {
	// LeaderHost returns the host of the broker serving a topic's
	// partition.
	LeaderHost(ctx context.Context, topic string, partition int) (string, error)
	// ControllerHost returns the host of the cluster's leading broker.
	ControllerHost(ctx context.Context) (string, error)
}

// Unplaced is implemented by drivers of clusters that have no node to
// name for a role (a topic's leader, the controller): every node serves
// every topic. Faults aimed by role are refused before the run, with its
// reason.
type Unplaced interface {
	// Unplaced says why no node serves a role, and what to aim at instead.
	Unplaced() string
}

// Pauser is implemented by consumers that can stop receiving for a while,
// for backlog tests. Messages already fetched when Pause is called may still
// be delivered; after Resume, delivery continues where it stopped.
type Pauser interface {
	Pause()
	Resume()
}

// Options are settings given on the command line rather than in the driver
// config.
type Options struct {
	// Endpoints, when set, replaces the broker addresses of the config.
	Endpoints []string
	// Hosts resolves host names the brokers advertise to addresses,
	// before the system's resolver, as /etc/hosts would: a local cluster
	// whose links pass through proxies advertises names that lead each
	// peer through its own link. Drivers dial every broker with Dial.
	Hosts map[string]string
	// Credentials, when set, are those of a local cluster brokerbench
	// started with TLS and authentication: drivers use them for what the
	// config leaves out.
	Credentials *Credentials
}

// Credentials are what a client needs to connect to a secured local
// cluster: the certificate authority that signed its nodes' certificates,
// a client certificate and key it accepts, and a user and password it
// knows. Password is a secret: it must never reach an output.
type Credentials struct {
	CAFile             string
	CertFile, KeyFile  string
	Username, Password string
}

// Dial connects to addr (host:port), resolving the host with o.Hosts first,
// within 10 s unless ctx ends sooner.
func (o Options) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip, ok := o.Hosts[host]; ok {
			addr = net.JoinHostPort(ip, port)
		}
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	return d.DialContext(ctx, network, addr)
}

// ResettingWrittenCounter is implemented by written counters whose
// broker keeps the count in memory for each topic it serves (Pulsar's
// message-in counter): a broker that restarts, or a topic that moves to
// another broker, counts again from zero there. In a run with faults
// such a count proves nothing, and the runner leaves it out.
type ResettingWrittenCounter interface {
	WrittenCounter
	// WrittenResets reports whether the count starts again from zero
	// when a broker restarts or a topic moves.
	WrittenResets() bool
}

// Factory builds a driver from its config. It must validate every setting
// and reject the ones it does not support with a workload.FieldError.
type Factory func(cfg *workload.DriverConfig, opts Options) (Driver, error)

// Capabilities say what a broker's model has, so that workloads are checked
// against it before a run (brokers.Check) and results show "–" where a
// setting does not apply. The conformance suite checks that a driver
// does what its capabilities say.
type Capabilities struct {
	// Partitions: a topic may have several partitions, each its own lane
	// of order. Without, partitionsPerTopic above 1 is an input error.
	Partitions bool
	// Replication: the broker keeps replicas, and the replication factor
	// applies.
	Replication bool
	// Replay: a consumer can start from the oldest retained message (a
	// log), not only from the messages that arrive after it subscribed
	// (a queue it creates). Without, a consume-only run is an input
	// error: it would read nothing.
	Replay bool
	// AcksLevels are the values of the producer's "acks" setting, how
	// many replicas acknowledge a message (Kafka's "0", "1", "all");
	// none: the producer does not choose.
	AcksLevels []string
	// Written: the driver implements WrittenCounter.
	Written bool
	// Transactions: producers group messages in transactions that are
	// committed or aborted (ProducerSpec.Transactional, Transactor), and
	// consumers can read only committed ones (ConsumerSpec.ReadCommitted).
	// Without, a workload with transactions is an input error.
	Transactions bool
}

// ErrRefused wraps a broker's refusal of the client's credentials or
// certificate, or the client's of the broker's certificate: the error
// says which setting to check, and retrying cannot help.
// Drivers mark such errors with Refused.
var ErrRefused = errors.New("refused")

// Refused marks err as a refusal (ErrRefused), its message unchanged.
func Refused(err error) error { return refused{err} }

type refused struct{ error }

func (r refused) Unwrap() error        { return r.error }
func (r refused) Is(target error) bool { return target == ErrRefused }

// ErrTopicNotFound is wrapped by DeleteTopic's error for a topic that does
// not exist.
var ErrTopicNotFound = errors.New("topic not found")

// RedactEndpoints returns endpoints (comma-separated addresses or URLs)
// with the password of every URL replaced by "xxxxx", for logs, results
// and reports: amqp://user:secret@host:5672 becomes
// amqp://user:xxxxx@host:5672.
func RedactEndpoints(endpoints string) string {
	parts := strings.Split(endpoints, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// ErrorKind names the kind of a send error for failure counts: the error's
// own Kind() if it has one, else a short generic name.
func ErrorKind(err error) string {
	var k interface{ Kind() string }
	switch {
	case errors.As(err, &k):
		return k.Kind()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "other"
	}
}
