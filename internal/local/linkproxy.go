package local

import (
	"encoding/json"
	"fmt"
	"net"
	"os"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ServeLinks runs the link proxy of a cluster with links: one proxy per
// link listed in linksFile (see Cluster.planLinks), shaped through
// toxiproxy's HTTP API on api. It returns only on error; the cluster stops
// it by its PID.
func ServeLinks(linksFile, api string) error {
	data, err := os.ReadFile(linksFile)
	if err != nil {
		return err
	}
	var links []Link
	if err := json.Unmarshal(data, &links); err != nil {
		return fmt.Errorf("%s: %w", linksFile, err)
	}
	host, port, err := net.SplitHostPort(api)
	if err != nil {
		return fmt.Errorf("--api %q: %w", api, err)
	}
	logger := zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	for _, l := range links {
		p := toxiproxy.NewProxy(server, l.Name, l.Listen, l.Upstream)
		if err := server.Collection.Add(p, true); err != nil {
			return fmt.Errorf("link %s on %s: %w", l.Name, l.Listen, err)
		}
	}
	fmt.Fprintf(os.Stderr, "link proxy: %d links, API on %s\n", len(links), api)
	server.Listen(host, port)
	return fmt.Errorf("the link proxy's API on %s stopped", api)
}
