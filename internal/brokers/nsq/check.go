package nsq

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// Check implements driver.Checker: the messages must fit nsqd's
// --max-msg-size, and every existing topic must exist.
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	var limit int64
	if err := d.call(ctx, http.MethodGet, "/config/max_msg_size", nil, &limit); err != nil {
		return err
	}
	var errs []error
	if int64(spec.MessageSize) > limit {
		errs = append(errs, fmt.Errorf("%w: messages of %d bytes exceed nsqd's --max-msg-size of %d bytes: start nsqd with a larger one, or send smaller messages",
			workload.ErrInvalid, spec.MessageSize, limit))
	}
	for _, t := range spec.ExistingTopics {
		if _, err := d.Written(ctx, t); errors.Is(err, driver.ErrTopicNotFound) {
			errs = append(errs, fmt.Errorf("%w: topic %q does not exist on nsqd at %s: create it first, or leave out --topic to let the run create its own",
				workload.ErrInvalid, t, d.cfg.httpAddr))
		} else if err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
