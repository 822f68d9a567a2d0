package rocketmq

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// admin administers a RocketMQ cluster over the remoting protocol, as
// mqadmin and OMB's driver do: routes from the name servers, topics,
// subscription groups and offsets on the brokers. It is safe for
// concurrent use.
type admin struct {
	namesrv []string // name server addresses, host:port
	cluster string   // the broker cluster topics are created on
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	// accessKey and secretKey sign every request for brokers whose ACL
	// checks them; empty: requests are not signed.
	accessKey, secretKey string
}

// call sends a request to the name server or broker at addr, signed
// when the admin has credentials, and returns its successful response.
func (a *admin) call(ctx context.Context, addr string, code int, ext map[string]string, body []byte) (*command, error) {
	if a.accessKey != "" {
		ext = sign(ext, body, a.accessKey, a.secretKey)
	}
	return invoke(ctx, a.dial, addr, code, ext, body)
}

// sign returns ext with the fields RocketMQ's ACL checks (its
// AclClientRPCHook): the access key, and the signature, HMAC-SHA1 in
// base64 of every field's value in the order of their names, then the
// body.
func sign(ext map[string]string, body []byte, accessKey, secretKey string) map[string]string {
	signed := map[string]string{"AccessKey": accessKey}
	for k, v := range ext {
		signed[k] = v
	}
	mac := hmac.New(sha1.New, []byte(secretKey))
	for _, k := range slices.Sorted(maps.Keys(signed)) {
		mac.Write([]byte(signed[k]))
	}
	mac.Write(body)
	signed["Signature"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return signed
}

// topicRoute is a topic's route as a name server gives it in standard
// JSON: its brokers' addresses by broker id (0: the master) and its
// queues on each broker.
type topicRoute struct {
	BrokerDatas []struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
	} `json:"queueDatas"`
}

// parseRoute decodes a route; a queue count below 0 is refused.
func parseRoute(body []byte) (*topicRoute, error) {
	var r topicRoute
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("topic route: %w", err)
	}
	for _, q := range r.QueueDatas {
		if q.ReadQueueNums < 0 || q.WriteQueueNums < 0 {
			return nil, fmt.Errorf("topic route: broker %q has %d read and %d write queues", q.BrokerName, q.ReadQueueNums, q.WriteQueueNums)
		}
	}
	return &r, nil
}

// queue is one queue of a topic: its broker's name, master address and
// the queue's id.
type queue struct {
	broker, addr string
	id           int
}

// queues returns every queue of the route on a broker that has a master,
// in order of broker name, then queue id.
func (r *topicRoute) queues() []queue {
	masters := r.masters()
	var qs []queue
	for _, q := range r.QueueDatas {
		addr, ok := masters[q.BrokerName]
		if !ok {
			continue
		}
		for id := range max(q.ReadQueueNums, q.WriteQueueNums) {
			qs = append(qs, queue{broker: q.BrokerName, addr: addr, id: id})
		}
	}
	slices.SortStableFunc(qs, func(a, b queue) int { return strings.Compare(a.broker, b.broker) })
	return qs
}

// masters returns the master address of every broker of the route, by
// broker name.
func (r *topicRoute) masters() map[string]string {
	m := map[string]string{}
	for _, b := range r.BrokerDatas {
		if addr, ok := b.BrokerAddrs["0"]; ok {
			m[b.BrokerName] = addr
		}
	}
	return m
}

// all returns every broker address of the route, masters and slaves.
func (r *topicRoute) all() []string {
	var addrs []string
	for _, b := range r.BrokerDatas {
		for _, a := range b.BrokerAddrs {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// errNoTopic is route's error for a topic no name server knows.
var errNoTopic = errors.New("topic does not exist")

// errNoCluster is brokers' error for a cluster no broker of the name
// servers belongs to.
var errNoCluster = errors.New("no broker of the cluster is registered")

// route returns a topic's route from the first name server that answers.
// A cluster's name is also a topic, routed to every broker of the
// cluster.
func (a *admin) route(ctx context.Context, topic string) (*topicRoute, error) {
	var errs []error
	for _, ns := range a.namesrv {
		resp, err := a.call(ctx, ns, codeGetRouteInfoByTopic, map[string]string{"topic": topic, "acceptStandardJsonOnly": "true"}, nil)
		if hasResponse(err, respTopicNotExist) {
			return nil, fmt.Errorf("%w: %q on name server %s", errNoTopic, topic, ns)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return parseRoute(resp.Body)
	}
	return nil, fmt.Errorf("name servers %s: %w", strings.Join(a.namesrv, ";"), errors.Join(errs...))
}

// brokers returns the route of the cluster: every broker of it.
func (a *admin) brokers(ctx context.Context) (*topicRoute, error) {
	r, err := a.route(ctx, a.cluster)
	if errors.Is(err, errNoTopic) {
		return nil, fmt.Errorf("broker cluster %q: %w with the name servers %s: check clusterName", a.cluster, errNoCluster, strings.Join(a.namesrv, ";"))
	}
	if err == nil && len(r.masters()) == 0 {
		return nil, fmt.Errorf("broker cluster %q has no master broker", a.cluster)
	}
	return r, err
}

// createTopic creates a topic of queues queues on every broker of the
// cluster, accepting messages of messageType (NORMAL, FIFO, DELAY or
// TRANSACTION), as OMB's driver creates its topics. It returns the
// names of the brokers that hold it.
func (a *admin) createTopic(ctx context.Context, topic string, queues int, messageType string) ([]string, error) {
	r, err := a.brokers(ctx)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues),
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false", "attributes": "+message.type=" + messageType,
	}
	for _, addr := range r.all() {
		if _, err := a.call(ctx, addr, codeUpdateAndCreateTopic, ext, nil); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(r.masters())), nil
}

// deleteTopic deletes a topic from every broker that has it and from
// the name servers; errNoTopic when none knows it.
func (a *admin) deleteTopic(ctx context.Context, topic string) error {
	r, err := a.route(ctx, topic)
	if err != nil {
		return err
	}
	for _, addr := range r.all() {
		if _, err := a.call(ctx, addr, codeDeleteTopicInBroker, map[string]string{"topic": topic}, nil); err != nil {
			return err
		}
	}
	for _, ns := range a.namesrv {
		if _, err := a.call(ctx, ns, codeDeleteTopicInNamesrv, map[string]string{"topic": topic, "clusterName": a.cluster}, nil); err != nil {
			return err
		}
	}
	return nil
}

// offset returns a queue's maximum offset (the next message's: how many
// were written to it) or, with min, its minimum (the oldest retained).
func (a *admin) offset(ctx context.Context, topic string, q queue, min bool) (int64, error) {
	code := codeGetMaxOffset
	if min {
		code = codeGetMinOffset
	}
	resp, err := a.call(ctx, q.addr, code, map[string]string{"topic": topic, "queueId": strconv.Itoa(q.id)}, nil)
	if err != nil {
		return 0, err
	}
	return extInt(resp, "offset")
}

// createGroup creates (or updates) a subscription group on the broker at
// addr, with RocketMQ's defaults: consumption on, 16 redeliveries.
func (a *admin) createGroup(ctx context.Context, addr, group string) error {
	body, _ := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "consumeFromMinEnable": true,
		"consumeBroadcastEnable": true, "retryQueueNums": 1, "retryMaxTimes": 16, "whichBrokerWhenConsumeSlowly": 1})
	_, err := a.call(ctx, addr, codeUpdateSubscriptionGroup, nil, body)
	return err
}

// deleteGroup deletes a subscription group, with its offsets, from the
// broker at addr.
func (a *admin) deleteGroup(ctx context.Context, addr, group string) error {
	_, err := a.call(ctx, addr, codeDeleteSubscriptionGroup, map[string]string{"groupName": group, "cleanOffset": "true"}, nil)
	return err
}

// groupOffset returns a subscription group's committed offset of a
// queue, and false when the group has none there.
func (a *admin) groupOffset(ctx context.Context, group, topic string, q queue) (int64, bool, error) {
	resp, err := a.call(ctx, q.addr, codeQueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q.id), "setZeroIfNotFound": "false"}, nil)
	if hasResponse(err, respQueryNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	off, err := extInt(resp, "offset")
	return off, err == nil, err
}

// setGroupOffset commits a subscription group's offset of a queue.
func (a *admin) setGroupOffset(ctx context.Context, group, topic string, q queue, offset int64) error {
	_, err := a.call(ctx, q.addr, codeUpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q.id), "commitOffset": strconv.FormatInt(offset, 10)}, nil)
	return err
}

// runtimeInfo returns the broker's runtime table (brokerVersionDesc,
// ...). A broker just started answers with a NoSuchElementException
// until its store statistics have their first sample (each second): it
// is asked again, for up to statsFirstSample, within ctx.
func (a *admin) runtimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.call(ctx, addr, codeGetBrokerRuntimeInfo, nil, nil)
	for deadline := time.Now().Add(statsFirstSample); noStatsYet(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
		resp, err = a.call(ctx, addr, codeGetBrokerRuntimeInfo, nil, nil)
	}
	if err != nil {
		return nil, err
	}
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		return nil, fmt.Errorf("runtime info of broker %s: %w", addr, err)
	}
	return kv.Table, nil
}

// brokerConfig returns the broker's configuration (a properties text).
func (a *admin) brokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.call(ctx, addr, codeGetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return parseProperties(string(resp.Body)), nil
}

// parseProperties reads key=value lines; others are left out.
func parseProperties(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// statsFirstSample bounds the wait for a just-started broker's first
// store statistics sample.
const statsFirstSample = 10 * time.Second

// noStatsYet says err is a broker's failure to report its runtime before
// its store statistics' first sample (an empty list's getLast).
func noStatsYet(err error) bool {
	var re *remotingError
	return errors.As(err, &re) && strings.Contains(re.remark, "NoSuchElementException")
}
