package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// recordOverhead bounds what a record batch of one record adds to its
// value: the batch header (61 bytes) and the record's own fields.
const recordOverhead = 128

// Check implements driver.Checker: every existing topic must exist, and a
// message with its batch overhead must fit the producer's
// max.request.size and the topics' max.message.bytes (the topic's own
// setting for existing topics; for new ones the driver's topic setting,
// else the broker's message.max.bytes).
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	ctx, cancel := d.apiCtx(ctx)
	defer cancel()
	var errs []error
	invalid := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", workload.ErrInvalid, fmt.Sprintf(format, args...)))
	}
	batch := int64(spec.MessageSize) + recordOverhead
	if limit := num(d.cfg.producer, "max.request.size"); batch > limit {
		invalid("messages of %d bytes (%d with record overhead) exceed the producer's max.request.size of %d bytes: raise max.request.size in the driver's producer settings, or send smaller messages",
			spec.MessageSize, batch, limit)
	}
	if len(spec.ExistingTopics) > 0 {
		md, err := d.admin.Metadata(ctx, spec.ExistingTopics...)
		if err != nil {
			return d.unreachable(err)
		}
		for _, t := range spec.ExistingTopics {
			td, ok := md.Topics[t]
			switch {
			case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
				invalid("topic %q does not exist on %s: create it first, or leave out --topic to let the run create its own", t, strings.Join(d.cfg.seeds, ","))
			case td.Err != nil:
				invalid("topic %q: %v", t, td.Err)
			}
		}
		if len(errs) == 0 {
			if cfgs, err := d.admin.DescribeTopicConfigs(ctx, spec.ExistingTopics...); err == nil {
				for _, rc := range cfgs {
					if v, ok := configValue(rc.Configs, "max.message.bytes"); ok && batch > v {
						invalid("messages of %d bytes exceed topic %q's max.message.bytes of %d bytes", spec.MessageSize, rc.Name, v)
					}
				}
			}
		}
		return errors.Join(errs...)
	}
	if v, ok := d.cfg.topic.Get("max.message.bytes"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && batch > n {
			invalid("messages of %d bytes exceed the topic setting max.message.bytes=%d: raise it in the driver's topic settings", spec.MessageSize, n)
		}
	} else if cfgs, err := d.admin.DescribeBrokerConfigs(ctx); err == nil {
		for _, rc := range cfgs {
			if v, ok := configValue(rc.Configs, "message.max.bytes"); ok && batch > v {
				invalid("messages of %d bytes exceed the broker's message.max.bytes of %d bytes: set topic.max.message.bytes in the driver config, or send smaller messages", spec.MessageSize, v)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// configValue returns the integer value of the config key in cs.
func configValue(cs []kadm.Config, key string) (int64, bool) {
	for _, c := range cs {
		if c.Key == key && c.Value != nil {
			n, err := strconv.ParseInt(*c.Value, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
