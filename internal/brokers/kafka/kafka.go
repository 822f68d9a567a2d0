// Package kafka is brokerbench's Apache Kafka: its driver, built on
// franz-go; the local clusters brokerbench starts (Kind, in KRaft mode);
// and the module that registers both (module.go).
//
// Kafka's own client property names (acks, linger.ms, batch.size, ...) are
// accepted and mapped onto franz-go options; where a property is not set,
// the Java client's default is applied so that results compare with studies
// made with the Java client. Unsupported properties are errors.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// localListener names the listener of a local Kafka's nodes that a
// config's security.protocol connects to: "plaintext", "ssl",
// "sasl_plaintext" or "sasl_ssl". The security settings of commonConfig
// count, else the producer's.
func localListener(dc *workload.DriverConfig) string {
	for _, p := range []workload.Properties{dc.Common, dc.Producer} {
		if v, ok := p.Get("security.protocol"); ok && v != "" {
			return strings.ToLower(v)
		}
	}
	return "plaintext"
}

// Driver talks to one Kafka cluster. It is safe for concurrent use.
type Driver struct {
	cfg   *config
	admin *kadm.Client
	cl    *kgo.Client
	// producers numbers the transactional producers, for their ids.
	producers atomic.Int64
}

var (
	_ driver.Driver             = (*Driver)(nil)
	_ driver.SubscriptionWaiter = (*Driver)(nil)
	_ driver.WrittenCounter     = (*Driver)(nil)
	_ driver.Placement          = (*Driver)(nil)
	_ driver.Transactor         = (*producer)(nil)
)

// New validates dc and connects an admin client. Connection problems show up
// on the first operation, not here.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	cfg.dial = opts.Dial
	cl, err := kgo.NewClient(cfg.clientOpts(scopeClient)...)
	if err != nil {
		return nil, fmt.Errorf("kafka admin client: %w", err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(ms(cfg.client, "default.api.timeout.ms").Milliseconds()))
	return &Driver{cfg: cfg, admin: adm, cl: cl}, nil
}

// apiCtx bounds an admin call by default.api.timeout.ms.
func (d *Driver) apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ms(d.cfg.client, "default.api.timeout.ms"))
}

// BrokerVersion implements driver.Driver: the Kafka version guessed from the
// brokers' supported API versions, said to be a guess. The protocol tells
// releases apart only by major and minor version (4.3, not 4.3.1).
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	vs, err := d.admin.ApiVersions(ctx)
	if err != nil {
		return "", d.unreachable(err)
	}
	var guesses []string
	vs.Each(func(v kadm.BrokerApiVersions) { guesses = append(guesses, v.VersionGuess()) })
	return versionLabel(guesses), nil
}

// releaseV is the "v" before a release number.
var releaseV = regexp.MustCompile(`\bv(\d)`)

// versionLabel describes the brokers' version guesses (kversion's "v4.3",
// "at least v4.1", ...): each distinct guess once, without the "v", and
// where they come from.
func versionLabel(guesses []string) string {
	seen := map[string]bool{}
	var out []string
	for _, g := range guesses {
		g = releaseV.ReplaceAllString(g, "$1")
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "Apache Kafka (version unknown: no broker answered)"
	}
	return "Apache Kafka " + strings.Join(out, ", ") + " (guessed from API versions)"
}

func (d *Driver) unreachable(err error) error {
	if advice := securityAdvice(err); advice != "" {
		return driver.Refused(fmt.Errorf("kafka at %s (%s): %w: %s", strings.Join(d.cfg.seeds, ","), d.cfg.secure[scopeClient].protocol, err, advice))
	}
	return fmt.Errorf("kafka at %s: %w (is the broker running? start one with 'brokerbench local up kafka')", strings.Join(d.cfg.seeds, ","), err)
}

// CreateTopic implements driver.Driver. A replication factor of 0 uses the
// driver config's.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	rf := spec.ReplicationFactor
	if rf == 0 {
		rf = d.cfg.rf
	}
	configs := map[string]*string{}
	for _, p := range append(d.cfg.topic.Effective(), spec.Config.Effective()...) {
		configs[p.Key] = &p.Value
	}
	resp, err := d.admin.CreateTopic(ctx, int32(spec.Partitions), int16(rf), configs, spec.Name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %q (%d partitions, replication factor %d): %w", spec.Name, spec.Partitions, rf, err)
	}
	// Wait until every partition has a leader, so the first sends do not
	// stall on metadata.
	for {
		md, err := d.admin.Metadata(ctx, spec.Name)
		if err == nil {
			if t, ok := md.Topics[spec.Name]; ok && t.Err == nil && len(t.Partitions) == spec.Partitions {
				ready := true
				for _, p := range t.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic %q: partitions have no leader yet: %w", spec.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DeleteTopic implements driver.Driver.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	resp, err := d.admin.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("delete topic %q: %w: %w", name, driver.ErrTopicNotFound, err)
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// Leader implements driver.Placement from the topic's metadata.
func (d *Driver) Leader(ctx context.Context, topic string, partition int) (int, error) {
	leaders, err := d.Leaders(ctx, topic)
	if err != nil {
		return 0, err
	}
	l, ok := leaders[partition]
	if !ok || l < 0 {
		return 0, fmt.Errorf("topic %q partition %d has no leader", topic, partition)
	}
	return l, nil
}

// Leaders implements driver.Placement from the topic's metadata.
func (d *Driver) Leaders(ctx context.Context, topic string) (map[int]int, error) {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	md, err := d.admin.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("read metadata of %q: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		return nil, fmt.Errorf("topic %q not in the metadata: %v", topic, t.Err)
	}
	leaders := make(map[int]int, len(t.Partitions))
	for id, p := range t.Partitions {
		leaders[int(id)] = int(p.Leader)
	}
	return leaders, nil
}

// Controller implements driver.Placement: the leader of the KRaft
// metadata quorum, from DescribeQuorum (which brokers forward to the
// controllers). The metadata response's controller id is no use here:
// KRaft clusters report a random broker in it.
func (d *Driver) Controller(ctx context.Context) (int, error) {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, d.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return 0, fmt.Errorf("describe the metadata quorum: %w", err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 || resp.Topics[0].Partitions[0].LeaderID < 0 {
		return 0, errors.New("the metadata quorum has no leader")
	}
	return int(resp.Topics[0].Partitions[0].LeaderID), nil
}

// Brokers implements driver.ClusterSizer from the cluster's metadata.
func (d *Driver) Brokers(ctx context.Context) (int, error) {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	md, err := d.admin.BrokerMetadata(ctx)
	if err != nil {
		return 0, fmt.Errorf("read cluster metadata: %w", err)
	}
	return len(md.Brokers), nil
}

// StoredMessages implements driver.WrittenCounter: the sum over partitions of
// the end offsets.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	ends, err := d.admin.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("list end offsets of %q: %w", topic, err)
	}
	// End offsets count every message ever written to a topic created
	// empty; start offsets would move when retention deletes segments.
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return total, nil
}

// WaitSubscription implements driver.SubscriptionWaiter. It describes the
// group every 100 ms until it is Stable with all its members and every
// partition of topic assigned; if ctx ends first, the error names the
// group, what it was last seen doing, and the last error describing it.
func (d *Driver) WaitSubscription(ctx context.Context, topic, subscription string, consumers int) error {
	group := d.cfg.group(subscription)
	md, err := d.admin.Metadata(ctx, topic)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("consumer group %q: read the metadata of topic %q: %w", group, topic, err)
		}
		return d.unreachable(err)
	}
	partitions := len(md.Topics[topic].Partitions)
	describe := func(ctx context.Context) (groupState, error) {
		groups, err := d.admin.DescribeGroups(ctx, group)
		if err != nil {
			return groupState{}, err
		}
		g, ok := groups[group]
		switch {
		case !ok:
			return groupState{}, errors.New("the group is missing from the response")
		case g.Err != nil:
			if g.ErrMessage != "" {
				return groupState{}, fmt.Errorf("%w: %s", g.Err, g.ErrMessage)
			}
			return groupState{}, g.Err
		}
		return groupState{state: g.State, members: len(g.Members), assigned: len(g.AssignedPartitions()[topic])}, nil
	}
	return awaitSettled(ctx, groupGoal{group: group, members: consumers, partitions: partitions}, 100*time.Millisecond, describe)
}

// groupGoal is the state a subscription's group must reach.
type groupGoal struct {
	group      string
	members    int // members joined
	partitions int // partitions of the topic assigned to them
}

// groupState is what one DescribeGroups answer says of a group.
type groupState struct {
	state    string // "Stable", "PreparingRebalance", ...
	members  int
	assigned int // partitions of the topic assigned
}

func (s groupState) reached(g groupGoal) bool {
	return s.state == "Stable" && s.members == g.members && s.assigned == g.partitions
}

// awaitSettled calls describe every interval until the group reaches its
// goal, and returns nil then; when ctx ends first it returns
// settleError of the last state and error seen.
func awaitSettled(ctx context.Context, goal groupGoal, every time.Duration, describe func(context.Context) (groupState, error)) error {
	var last *groupState
	var lastErr error
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		s, err := describe(ctx)
		switch {
		case err == nil && s.reached(goal):
			return nil
		case err == nil:
			last = &s
		case ctx.Err() == nil:
			// An error only because ctx ended says nothing of the group.
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return settleError(goal, last, lastErr, ctx.Err())
		case <-t.C:
			t.Reset(every)
		}
	}
}

// settleError is the error of a group that did not reach goal before the
// wait ended with cause: the group, its last state seen (nil: never
// described), and the last error describing it, if any.
func settleError(goal groupGoal, last *groupState, lastErr, cause error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "consumer group %q did not settle: ", goal.group)
	if last == nil {
		fmt.Fprintf(&b, "never described (waiting for %d members and %d partitions assigned)", goal.members, goal.partitions)
	} else {
		state := last.state
		if state == "" {
			state = "unknown"
		}
		fmt.Fprintf(&b, "last seen in state %s with %d of %d members joined and %d of %d partitions assigned",
			state, last.members, goal.members, last.assigned, goal.partitions)
	}
	if lastErr != nil {
		fmt.Fprintf(&b, "; last DescribeGroups error: %v", lastErr)
	}
	return fmt.Errorf("%s: %w", b.String(), cause)
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties {
	redact := (&workload.DriverConfig{Common: d.cfg.client, Producer: d.cfg.producer, Consumer: d.cfg.consumer, Topic: d.cfg.topic}).Redacted()
	return map[string]workload.Properties{
		"client": redact.Common, "producer": redact.Producer, "consumer": redact.Consumer, "topic": redact.Topic,
	}
}

// Close implements driver.Driver.
func (d *Driver) Close() { d.cl.Close() }

// NewProducer implements driver.Driver. Each producer is its own franz-go
// client, as each Java producer is its own KafkaProducer. A transactional
// one has a transactional id of its own, from the topic's name, and needs
// idempotent writes (acks=all, enable.idempotence not false); its producer
// id is loaded before it returns.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	opts := append(d.cfg.producerOpts(spec.MaxMessageBytes, spec.MaxInFlight), kgo.DefaultProduceTopic(spec.Topic))
	if spec.Transactional {
		if !d.cfg.idempotent() {
			return nil, fmt.Errorf("%w: kafka transactions need an idempotent producer: set acks=all and leave out enable.idempotence=false", workload.ErrInvalid)
		}
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-tx-%d", spec.Topic, d.producers.Add(1))))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	if spec.Transactional {
		// The producer id of a transactional id comes from the
		// transaction coordinator, which the cluster's first
		// transactional producer makes create its topic: seconds the
		// setup takes, not the first transaction.
		if _, _, err := cl.ProducerID(ctx); err != nil {
			cl.Close()
			return nil, fmt.Errorf("kafka transactional producer: load its producer id: %w", err)
		}
	}
	p := &producer{cl: cl, topic: spec.Topic, ack: ack}
	p.promise = p.onProduced
	return p, nil
}

type producer struct {
	cl      *kgo.Client
	topic   string
	ack     driver.AckFunc
	promise func(*kgo.Record, error) // p.onProduced, bound once
	// pending counts messages whose promise has not run: franz-go fails
	// buffered records on Close but may call their promises after Close
	// returns, and the contract allows no acknowledgement after it.
	pending sync.WaitGroup
}

// recordSlot is the per-Message state kept in Message.DriverState: the
// record franz-go sends and a context that leads back to the Message.
type recordSlot struct {
	rec kgo.Record
	ctx messageContext
}

type messageContext struct {
	context.Context
	msg *driver.Message
}

// Send implements driver.Producer. It allocates only the first time a
// Message is sent.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	slot, _ := m.DriverState.(*recordSlot)
	if slot == nil {
		slot = &recordSlot{ctx: messageContext{Context: context.Background(), msg: m}}
		m.DriverState = slot
	}
	slot.rec = kgo.Record{Topic: p.topic, Key: m.Key, Value: m.Value, Context: &slot.ctx}
	// The record's timestamp (CreateTime, also the start of its delivery
	// timeout) is the runner's send time: franz-go would otherwise read the
	// clock once more per record, about 6% of a producer's CPU at 100 B.
	if m.Time > 0 {
		slot.rec.Timestamp = time.Unix(0, m.Time)
	}
	p.pending.Add(1)
	p.cl.Produce(ctx, &slot.rec, p.promise)
}

func (p *producer) onProduced(r *kgo.Record, err error) {
	m := r.Context.(*messageContext).msg
	if err != nil {
		err = sendError{err}
	}
	p.ack(m, err)
	p.pending.Done()
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }

// Begin implements driver.Transactor.
func (p *producer) Begin() error { return p.cl.BeginTransaction() }

// End implements driver.Transactor with EndTransaction. A commit that
// fails, or whose outcome is unknown, is followed by an abort, as
// franz-go advises, so that the producer can begin again.
func (p *producer) End(ctx context.Context, commit bool) error {
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	err := p.cl.EndTransaction(ctx, how)
	if err != nil && commit {
		if abortErr := p.cl.EndTransaction(ctx, kgo.TryAbort); abortErr != nil {
			return fmt.Errorf("commit: %w; abort after it: %w", err, abortErr)
		}
		return fmt.Errorf("commit (aborted after it): %w", err)
	}
	return err
}

// Close implements driver.Producer: messages in flight are failed, and
// every acknowledgement has been called when it returns.
func (p *producer) Close() {
	p.cl.Close()
	p.pending.Wait()
}

// sendError gives Kafka send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error: the Kafka error code name, or the franz-go
// condition.
func (e sendError) Kind() string {
	var ke *kerr.Error
	switch {
	case errors.As(e.err, &ke):
		return ke.Message
	case errors.Is(e.err, kgo.ErrRecordTimeout):
		return "RECORD_TIMEOUT"
	case errors.Is(e.err, kgo.ErrRecordRetries):
		return "RECORD_RETRIES_EXHAUSTED"
	case errors.Is(e.err, kgo.ErrClientClosed):
		return "CLIENT_CLOSED"
	case errors.Is(e.err, kgo.ErrMaxBuffered):
		return "MAX_BUFFERED"
	case errors.Is(e.err, context.Canceled):
		return "CANCELED"
	case errors.Is(e.err, context.DeadlineExceeded):
		return "TIMEOUT"
	default:
		return "OTHER"
	}
}

// NewConsumer implements driver.Driver: one group member, polling in its own
// goroutine until Close.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	c := &consumer{ready: make(chan struct{}), done: make(chan struct{}), consume: consume, topic: spec.Topic}
	opts := append(d.cfg.consumerOpts(spec.Topic, d.cfg.group(spec.Subscription), spec.Start, spec.ReadCommitted),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			c.readyOnce.Do(func() { close(c.ready) })
		}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	c.cl = cl
	c.autoCommit = must(d.cfg.consumer.Get("enable.auto.commit")) == "true"
	c.maxPoll = int(num(d.cfg.consumer, "max.poll.records"))
	pollCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.poll(pollCtx)
	return c, nil
}

type consumer struct {
	cl         *kgo.Client
	topic      string
	consume    driver.ConsumeFunc
	ready      chan struct{}
	readyOnce  sync.Once
	done       chan struct{}
	cancel     context.CancelFunc
	autoCommit bool
	maxPoll    int
	committing atomic.Bool
}

func (c *consumer) poll(ctx context.Context) {
	defer close(c.done)
	var del driver.Delivery
	for {
		fetches := c.cl.PollRecords(ctx, c.maxPoll)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		iter := fetches.RecordIter()
		for !iter.Done() {
			r := iter.Next()
			del.Value, del.Lane = r.Value, r.Partition
			c.consume(&del)
		}
		if !c.autoCommit && c.committing.CompareAndSwap(false, true) {
			go func() {
				defer c.committing.Store(false)
				_ = c.cl.CommitUncommittedOffsets(ctx)
			}()
		}
	}
}

// Ready implements driver.Consumer: it returns once the member has joined
// its group and received an assignment (possibly empty).
func (c *consumer) Ready(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kafka consumer did not join its group: %w", ctx.Err())
	}
}

// Pause implements driver.Pauser: the client stops fetching the topic.
func (c *consumer) Pause() { c.cl.PauseFetchTopics(c.topic) }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.cl.ResumeFetchTopics(c.topic) }

// Close implements driver.Consumer.
func (c *consumer) Close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}
