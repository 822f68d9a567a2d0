package nsq

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// Check implements driver.Checker: the messages must fit the
// --max-msg-size of every nsqd (the smallest), and every existing topic
// must exist on an nsqd.
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	var errs []error
	for _, n := range d.nodes {
		var limit int64
		if err := d.call(ctx, n.httpAddr, http.MethodGet, "/config/max_msg_size", nil, &limit); err != nil {
			return err
		}
		if int64(spec.MessageSize) > limit {
			errs = append(errs, fmt.Errorf("%w: messages of %d bytes exceed the --max-msg-size of %d bytes of nsqd at %s: start nsqd with a larger one, or send smaller messages",
				workload.ErrInvalid, spec.MessageSize, limit, n.httpAddr))
		}
	}
	for _, t := range spec.ExistingTopics {
		if _, err := d.Written(ctx, t); errors.Is(err, driver.ErrTopicNotFound) {
			errs = append(errs, fmt.Errorf("%w: topic %q does not exist on nsqd at %s: create it first, or leave out --topic to let the run create its own",
				workload.ErrInvalid, t, strings.Join(d.cfg.nsqds, ", ")))
		} else if err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
