package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// metadataOverhead bounds what a message's metadata and frame add to its
// value in a send.
const metadataOverhead = 512

// Check implements driver.Checker: every existing topic must exist, a
// message with its metadata must fit the broker's maxMessageSize, and
// the cluster must have the bookies an ensemble takes (the last two when
// the broker discloses its configuration and bookies: it may ask for a
// superuser).
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	var errs []error
	invalid := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", workload.ErrInvalid, fmt.Sprintf(format, args...)))
	}
	var conf map[string]string
	err := d.admin.do(ctx, http.MethodGet, "/admin/v2/brokers/configuration/runtime", nil, &conf)
	switch {
	case hasStatus(err, http.StatusUnauthorized) || hasStatus(err, http.StatusForbidden):
	case err != nil:
		return d.unreachable(err)
	default:
		if limit, err := strconv.Atoi(conf["maxMessageSize"]); err == nil && spec.MessageSize+metadataOverhead > limit {
			invalid("messages of %d bytes (%d with metadata) exceed the broker's maxMessageSize of %d bytes: raise maxMessageSize in the broker's configuration, or send smaller messages",
				spec.MessageSize, spec.MessageSize+metadataOverhead, limit)
		}
	}
	if n, ok := d.bookies(ctx); ok && d.cfg.persistence.ensemble > n {
		invalid("the namespace's persistence policy asks for ensembles of %d bookies, and the cluster at %s has %d: give persistence.ensembleSize, writeQuorum and ackQuorum of at most %[3]d (OMB's files ask for 3), or a smaller replicationFactor",
			d.cfg.persistence.ensemble, d.admin.base, n)
	}
	for _, t := range spec.ExistingTopics {
		exists, err := d.topicExists(ctx, t)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !exists:
			invalid("topic %q does not exist in namespace %s/%s on %s: create it first, or leave out --topic to let the run create its own",
				t, d.cfg.tenant, d.cfg.namespace, d.admin.base)
		}
	}
	return errors.Join(errs...)
}

// topicExists says whether a topic of the driver's namespace exists,
// partitioned or not.
func (d *Driver) topicExists(ctx context.Context, topic string) (bool, error) {
	n, err := d.partitions(ctx, topic)
	switch {
	case hasStatus(err, http.StatusNotFound):
		return false, nil
	case err != nil || n > 0:
		return n > 0, err
	}
	err = d.admin.do(ctx, http.MethodGet, topicPath(d.cfg.tenant, d.cfg.namespace, topic)+"/stats", nil, nil)
	if hasStatus(err, http.StatusNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up topic %q: %w", topic, err)
	}
	return true, nil
}

// bookies returns how many bookies the cluster has registered, and false
// when the broker does not say.
func (d *Driver) bookies(ctx context.Context) (int, bool) {
	var all struct {
		Bookies []json.RawMessage `json:"bookies"`
	}
	if err := d.admin.do(ctx, http.MethodGet, "/admin/v2/bookies/all", nil, &all); err != nil {
		return 0, false
	}
	return len(all.Bookies), true
}
