package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// proxyMaxMessageSize is the largest message body a proxy accepts by
// default (its maxMessageSize, which it does not disclose).
const proxyMaxMessageSize = 4 << 20

// Check implements driver.Checker: the cluster must have a broker (a
// cluster of none is an input error: clusterName is wrong), a
// message must fit the brokers' maxMessageSize and the proxy's default,
// and every existing topic must exist.
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	r, err := d.admin.brokers(ctx)
	if err != nil {
		return d.unreachable(err)
	}
	var errs []error
	invalid := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", workload.ErrInvalid, fmt.Sprintf(format, args...)))
	}
	if spec.MessageSize > proxyMaxMessageSize {
		invalid("messages of %d bytes exceed the %d bytes a RocketMQ proxy accepts by default: raise maxMessageSize in the proxy's and the brokers' configuration, or send smaller messages",
			spec.MessageSize, proxyMaxMessageSize)
	}
	for name, addr := range r.masters() {
		conf, err := d.admin.brokerConfig(ctx, addr)
		if err != nil {
			return d.unreachable(err)
		}
		if limit, err := strconv.Atoi(conf["maxMessageSize"]); err == nil && spec.MessageSize > limit {
			invalid("messages of %d bytes exceed broker %s's maxMessageSize of %d bytes: raise it in the broker's configuration, or send smaller messages", spec.MessageSize, name, limit)
		}
	}
	for _, t := range spec.ExistingTopics {
		_, err := d.admin.route(ctx, t)
		switch {
		case errors.Is(err, errNoTopic):
			invalid("topic %q does not exist in the RocketMQ cluster of name servers %s: create it first, or leave out --topic to let the run create its own",
				t, strings.Join(d.cfg.namesrv, ";"))
		case err != nil:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
