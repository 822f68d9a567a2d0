package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers/pulsar"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newPulsar(port int) *local.Cluster { return pulsar.NewLocal(port, 1) }

// pulsarStandaloneCluster is the cluster name of a local standalone node.
const pulsarStandaloneCluster = "standalone"

// pointPulsarDriver points OMB's Pulsar driver file at the standalone
// node: serviceUrl and httpUrl become its addresses, clusterName its
// cluster's name ("standalone"; the file's "local" is no cluster of the
// node, and the tenant OMB creates must be allowed on one), and the
// persistence policy's ensemble, write and ack quorums become 1 (a
// standalone node has one bookie).
func pointPulsarDriver(text string, st local.Status) (string, error) {
	web := st.Endpoints("http")
	if len(web) == 0 {
		return "", errors.New("the Pulsar node serves no HTTP")
	}
	var err error
	for _, s := range []struct{ key, value string }{
		{"serviceUrl", "pulsar://" + st.Address()}, {"httpUrl", "http://" + web[0]}, {"clusterName", pulsarStandaloneCluster},
		{"ensembleSize", "1"}, {"writeQuorum", "1"}, {"ackQuorum", "1"},
	} {
		if text, err = setRequired(text, "Pulsar", s.key, s.value); err != nil {
			return "", err
		}
	}
	return text, nil
}

const pulsarCounted = "the messages the broker took on the runs' topics (each topic's msgInCounter)"

// pulsarOwnTenants are the tenants a standalone node makes for itself.
var pulsarOwnTenants = []string{"public", "pulsar", "sample"}

// pulsarAdmin is the admin REST API of the node st describes.
type pulsarAdmin struct{ base string }

func newPulsarAdmin(st local.Status) (pulsarAdmin, error) {
	web := st.Endpoints("http")
	if len(web) == 0 {
		return pulsarAdmin{}, errors.New("the Pulsar node serves no HTTP")
	}
	return pulsarAdmin{base: "http://" + web[0] + "/admin/v2/"}, nil
}

// do sends a request to path (under /admin/v2/) and decodes its JSON
// answer into out, if out is not nil.
func (a pulsarAdmin) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// runNamespaces lists the namespaces ("tenant/namespace") of every
// tenant but the node's own: those the runs made.
func (a pulsarAdmin) runNamespaces(ctx context.Context) ([]string, error) {
	var tenants, all []string
	if err := a.do(ctx, http.MethodGet, "tenants", &tenants); err != nil {
		return nil, err
	}
	for _, t := range tenants {
		if slices.Contains(pulsarOwnTenants, t) {
			continue
		}
		var ns []string
		if err := a.do(ctx, http.MethodGet, "namespaces/"+url.PathEscape(t), &ns); err != nil {
			return nil, err
		}
		all = append(all, ns...)
	}
	return all, nil
}

// topicPath is the admin path of a persistent topic's name
// ("persistent://tenant/namespace/topic"), or "" for a system topic or
// another name.
func topicPath(name string) string {
	rest, ok := strings.CutPrefix(name, "persistent://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || strings.HasPrefix(parts[2], "__") {
		return ""
	}
	return "persistent/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1]) + "/" + url.PathEscape(parts[2])
}

// publishedPulsar sums the msgInCounter of every topic (every partition)
// in the runs' namespaces.
func publishedPulsar(ctx context.Context, st local.Status) (int64, error) {
	a, err := newPulsarAdmin(st)
	if err != nil {
		return 0, err
	}
	namespaces, err := a.runNamespaces(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the runs' namespaces: %w", err)
	}
	var n int64
	for _, ns := range namespaces {
		var topics []string
		if err := a.do(ctx, http.MethodGet, "persistent/"+ns, &topics); err != nil {
			return 0, fmt.Errorf("list the topics of %s: %w", ns, err)
		}
		for _, t := range topics {
			path := topicPath(t)
			if path == "" {
				continue
			}
			var stats struct {
				MsgInCounter int64 `json:"msgInCounter"`
			}
			if err := a.do(ctx, http.MethodGet, path+"/stats", &stats); err != nil {
				return 0, fmt.Errorf("count the messages of %s: %w", t, err)
			}
			n += stats.MsgInCounter
		}
	}
	return n, nil
}

// cleanPulsar deletes the runs' namespaces: their partitioned topics,
// their other topics (forced: a run's subscriptions stay), then each
// namespace.
func cleanPulsar(ctx context.Context, st local.Status) error {
	a, err := newPulsarAdmin(st)
	if err != nil {
		return err
	}
	namespaces, err := a.runNamespaces(ctx)
	if err != nil {
		return fmt.Errorf("list the runs' namespaces: %w", err)
	}
	for _, ns := range namespaces {
		for _, list := range []struct{ path, suffix string }{{"persistent/" + ns + "/partitioned", "/partitions"}, {"persistent/" + ns, ""}} {
			var topics []string
			if err := a.do(ctx, http.MethodGet, list.path, &topics); err != nil {
				return fmt.Errorf("list the topics of %s: %w", ns, err)
			}
			for _, t := range topics {
				if path := topicPath(t); path != "" && (list.suffix != "" || !strings.Contains(t, "-partition-")) {
					if err := a.do(ctx, http.MethodDelete, path+list.suffix+"?force=true", nil); err != nil {
						return fmt.Errorf("delete %s: %w", t, err)
					}
				}
			}
		}
		if err := a.do(ctx, http.MethodDelete, "namespaces/"+ns, nil); err != nil {
			return fmt.Errorf("delete namespace %s: %w", ns, err)
		}
	}
	return nil
}
