// Command brokerbench benchmarks message brokers. This file only wires the
// process to internal/cli.
package main

import (
	"context"
	"os"

	_ "github.com/brokerbench/brokerbench/internal/brokers/all" // registers every broker
	"github.com/brokerbench/brokerbench/internal/cli"
)

func main() {
	os.Exit(cli.Execute(context.Background(), os.Args[1:], cli.IO{Out: os.Stdout, Err: os.Stderr}))
}
