// Package driver defines what brokerbench needs from a message broker and
// keeps the registry of broker drivers. The runner works only through these
// interfaces and never names a broker.
//
// A driver package registers itself in an init function:
//
//	func init() { driver.Register("kafka", New) }
//
// and is linked into the binary by a blank import in the CLI wiring.
package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
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
}

// ConsumerSpec describes one consumer.
type ConsumerSpec struct {
	Topic string
	// Subscription names the group of consumers that share the topic's
	// messages; every subscription receives every message.
	Subscription string
}

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
	Value     []byte
	Partition int32
	Offset    int64
}

// ConsumeFunc is called for every message a consumer receives, serially per
// consumer. It must not retain d or d.Value, and must not block.
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

// StoredCounter is implemented by drivers that can count the messages a topic
// holds, independently of the producers' acknowledgements.
type StoredCounter interface {
	// StoredMessages returns the number of messages ever written to a topic
	// that was created empty (for Kafka, the sum of the partitions' end
	// offsets: retention deleting old segments does not lower it).
	StoredMessages(ctx context.Context, topic string) (int64, error)
}

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

// Factory builds a driver from its config. It must validate every setting
// and reject the ones it does not support with a workload.FieldError.
type Factory func(cfg *workload.DriverConfig, opts Options) (Driver, error)

var (
	mu       sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes a driver available by name. It panics if name is taken.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("driver %q registered twice", name))
	}
	registry[name] = f
}

// Names returns the registered driver names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknownDriver is returned by New for a name nobody registered.
var ErrUnknownDriver = errors.New("unknown driver")

// ErrTopicNotFound is wrapped by DeleteTopic's error for a topic that does
// not exist.
var ErrTopicNotFound = errors.New("topic not found")

// New builds the driver cfg names.
func New(cfg *workload.DriverConfig, opts Options) (Driver, error) {
	mu.RLock()
	f, ok := registry[cfg.Name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (from %s): available drivers: %s", ErrUnknownDriver, cfg.Name, cfg.Source, strings.Join(Names(), ", "))
	}
	return f(cfg, opts)
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
