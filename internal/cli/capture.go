package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/capture"
	"github.com/brokerbench/brokerbench/internal/engine"
)

func newCaptureCmd(io IO) *cobra.Command {
	var broker, driverFile, topic, out string
	duration := 10 * time.Minute
	cmd := &cobra.Command{
		Use:   "capture --topic TOPIC",
		Short: "Record a live Kafka topic's shape and write a workload that replays it",
		Long: `capture reads a live Kafka topic without disturbing it: a client of no
consumer group reads every partition from its end, commits nothing, and
keeps statistics only, never a payload or a key, in bounded memory. When
--duration has passed, or at Ctrl-C, it writes into --out:

  capture.json   the rate per second, the size distribution, the number of
                 distinct keys (HyperLogLog), the most frequent keys' counts
                 and a fitted Zipf exponent, header sizes, how sampled
                 payloads compress with each codec, the partitions' counts
  capture.html   the same as a page with charts
  workload.yaml  a workload that replays that shape (rate.csv its rate curve)

See docs/capture.md for what is replayed and how closely.`,
		Example: `  brokerbench capture --broker 10.0.0.5:9092 --topic orders --duration 10m --out orders-shape
  brokerbench run orders-shape/workload.yaml --broker 127.0.0.1:9092
  brokerbench capture --driver secure-kafka.yaml --topic orders    # TLS and SASL as for run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := capture.KafkaSource(broker, driverFile, topic)
			if err != nil {
				return err
			}
			if out == "" {
				out = "capture-" + topic
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := capture.Run(ctx, capture.Options{Topic: topic, Duration: duration, OutDir: out, Source: src, Log: io.Err})
			if res != nil {
				for _, n := range res.Notes {
					fmt.Fprintf(io.Out, "note: %s\n", n)
				}
				for _, f := range res.Files {
					fmt.Fprintf(io.Out, "wrote %s\n", f)
				}
			}
			if err == nil && res.Shape.Interrupted {
				return engine.WithKind(engine.Interrupted, fmt.Errorf("interrupted after %.0f s: what was read is written", res.Shape.Seconds))
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&broker, "broker", "", "Kafka broker addresses, comma-separated (default: the driver file's bootstrap.servers)")
	fl.StringVar(&driverFile, "driver", "", "Kafka driver file (OMB or brokerbench format) for its connection and security settings")
	fl.StringVar(&topic, "topic", "", "the topic to capture (required)")
	fl.DurationVar(&duration, "duration", duration, fmt.Sprintf("how long to read (at most %v)", capture.MaxDuration))
	fl.StringVar(&out, "out", "", "folder to write the files to (default capture-TOPIC)")
	return cmd
}
