package redis

import (
	"net/url"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local server brokerbench starts for Redis:
// one node, as brokerbench runs no Redis Cluster.
var LocalKind = &brokers.Local{Kind: "redis", Port: 6379, New: NewLocal, MaxNodes: 1,
	NoLinks: "brokerbench does not carry a local Redis server's connections through the link proxy yet",
	Help: "Redis (redis) is Debian's redis-server (installed with apt-get when brokerbench " +
		"runs as root): one server on 127.0.0.1:6379 with an append-only file.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "redis", New: New, EndpointSettings: []string{"addr", "redisHost"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{Partitions: true, Replay: true, Written: true},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "the server's INFO command, at redis://host:port",
			Serves: func(u *url.URL) bool { return u.Scheme == "redis" || u.Scheme == "rediss" },
			Read:   readInfo},
		OMBClasses:  []string{"io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver"},
		OMBTopLevel: []string{"redisHost", "redisPort", "redisUser", "redisPass", "jedisPoolMaxTotal", "jedisPoolMaxIdle"},
		Docs:        "docs/drivers/redis.md",
	})
}
