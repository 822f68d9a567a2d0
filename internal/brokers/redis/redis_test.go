package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the redis server the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("redis", 29379)

func TestMain(m *testing.M) { server.Main(m) }

func newDriver(t *testing.T, dc *workload.DriverConfig) driver.Driver {
	t.Helper()
	d, err := New(dc, driver.Options{Endpoints: []string{server.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConformance: the Redis Streams driver passes the driver contract's
// conformance suite against a real redis-server.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "redis", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			return newDriver(t, &workload.DriverConfig{Name: "redis", Source: "test", ReplicationFactor: 1})
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "redis", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
		},
	})
}

// TestOMBDriverFile: OMB's Redis driver file names the server with
// redisHost and redisPort, and its Jedis pool settings are accepted;
// unknown settings are refused with their line.
func TestOMBDriverFile(t *testing.T) {
	host, port, _ := strings.Cut(server.Get(t).Addr, ":")
	dc, err := workload.ParseDriver("redis.yaml", []byte("name: Redis\ndriverClass: io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver\nredisHost: "+host+"\nredisPort: "+port+"\njedisPoolMaxTotal: 64\njedisPoolMaxIdle: 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(dc, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "Redis 7.") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
	_, err = New(&workload.DriverConfig{Name: "redis", Source: "d.yaml", Producer: workload.Properties{{Key: "maxPipline", Value: "5", File: "d.yaml", Line: 3}}}, driver.Options{})
	if err == nil || !strings.Contains(err.Error(), "d.yaml:3") || !strings.Contains(err.Error(), `did you mean "maxPipeline"`) {
		t.Errorf("a misspelled setting: %v", err)
	}
}

// TestOMBPoolSizes: OMB's Jedis pool sizes are checked as the integers
// OMB's RedisClientConfig takes, though each client here has its own
// connection.
func TestOMBPoolSizes(t *testing.T) {
	for _, tc := range []struct {
		total string
		ok    bool
	}{{"64", true}, {"lots", false}} {
		dc, err := workload.ParseDriver("redis.yaml", []byte("name: Redis\ndriverClass: io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver\nredisHost: localhost\njedisPoolMaxTotal: "+tc.total+"\njedisPoolMaxIdle: 16\n"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseConfig(dc, nil, nil)
		if tc.ok != (err == nil) || !tc.ok && !strings.Contains(err.Error(), "redis.yaml:4") {
			t.Errorf("jedisPoolMaxTotal %s: %v", tc.total, err)
		}
	}
}

// TestOMBDriverFileRuns: OMB's driver-redis/redis.yaml, unchanged, runs
// OMB's workload from OMB's layout against the test's Redis, taken as
// the running local server, whose address replaces the file's
// redisHost and redisPort.
func TestOMBDriverFileRuns(t *testing.T) {
	c := server.Get(t).Cluster
	omblayout.Run(t, "driver-redis/redis.yaml", omblayout.Target{LocalPort: c.Port, StateDir: c.StateDir})
}
