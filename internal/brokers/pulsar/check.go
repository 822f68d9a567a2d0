package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// metadataOverhead bounds what a message's metadata and frame add to its
// value in a send.
const metadataOverhead = 512

// Check implements driver.Checker: every existing topic must exist, a
// message with its metadata must fit the broker's maxMessageSize, the
// cluster must have the bookies an ensemble takes (these two when the
// broker discloses its configuration and bookies: it may ask for a
// superuser), and a tenant the driver will create must be allowed on a
// cluster the broker knows (clusterName).
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
	if msg := d.unknownCluster(ctx); msg != "" {
		invalid("%s", msg)
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

// unknownCluster says why the tenant the driver would create could not
// be allowed on the cluster clusterName names, one the broker does not
// know (OMB's files name "local", a standalone node "standalone"); ""
// when it can, the tenant exists, or the broker does not say.
func (d *Driver) unknownCluster(ctx context.Context) string {
	if d.cfg.clusters == nil {
		return ""
	}
	var tenants, clusters []string
	if d.admin.do(ctx, http.MethodGet, "/admin/v2/tenants", nil, &tenants) != nil || contains(tenants, d.cfg.tenant) ||
		d.admin.do(ctx, http.MethodGet, "/admin/v2/clusters", nil, &clusters) != nil || contains(clusters, d.cfg.clusters[0]) {
		return ""
	}
	return fmt.Sprintf("clusterName %q is not a cluster of the broker at %s, which knows %s: tenant %q cannot be created there; name one of those, or leave clusterName out",
		d.cfg.clusters[0], d.admin.base, strings.Join(clusters, ", "), d.cfg.tenant)
}
