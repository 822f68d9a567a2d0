// Command brokerbench benchmarks message brokers. This file only wires the
// process to internal/cli.
package main

import (
	"context"
	"os"

	"github.com/brokerbench/brokerbench/internal/cli"
	_ "github.com/brokerbench/brokerbench/internal/driver/kafka"          // registers the "kafka" driver
	_ "github.com/brokerbench/brokerbench/internal/driver/memory"         // registers the "memory" driver
	_ "github.com/brokerbench/brokerbench/internal/driver/nats"           // registers the "nats" driver
	_ "github.com/brokerbench/brokerbench/internal/driver/rabbitmq"       // registers the "rabbitmq" driver
	_ "github.com/brokerbench/brokerbench/internal/driver/rabbitmqstream" // registers the "rabbitmq-stream" driver
	_ "github.com/brokerbench/brokerbench/internal/driver/redis"          // registers the "redis" driver
)

func main() {
	os.Exit(cli.Execute(context.Background(), os.Args[1:], cli.IO{Out: os.Stdout, Err: os.Stderr}))
}
