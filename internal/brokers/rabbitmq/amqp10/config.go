package amqp10

import (
	"slices"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// settings are the driver's own settings by section, with their
// defaults; every other setting of commonConfig is the AMQP 0-9-1
// driver's (amqpUris, queueType, messagePersistence, saslMechanism, TLS),
// which makes the topics and whose URIs the AMQP 1.0 connections reach.
var settings = map[string]map[string]string{
	"common": {
		// v1: RabbitMQ 3's addresses (its rabbitmq_amqp1_0 plugin); v2:
		// RabbitMQ 4's.
		"addressFormat": string(formatV1),
	},
	"topic":    {},
	"producer": {},
	"consumer": {
		// Link credit: the messages the broker may send a consumer ahead
		// of its acceptances.
		"credit": "1000",
	},
}

// config is a validated configuration of the driver's own settings.
type config struct {
	format    addressFormat
	credit    int
	effective map[string]workload.Properties
}

// split parts dc into the driver's own settings (own) and the AMQP 0-9-1
// driver's (rest): the common settings it does not know, and the
// replication factor.
func split(dc *workload.DriverConfig) (own, rest *workload.DriverConfig) {
	own = &workload.DriverConfig{Name: dc.Name, Source: dc.Source, Topic: dc.Topic, Producer: dc.Producer, Consumer: dc.Consumer}
	rest = &workload.DriverConfig{Name: dc.Name, Source: dc.Source, Format: dc.Format, ReplicationFactor: dc.ReplicationFactor}
	for _, p := range dc.Common {
		if _, ok := settings["common"][p.Key]; ok {
			own.Common = append(own.Common, p)
		} else {
			rest.Common = append(rest.Common, p)
		}
	}
	return own, rest
}

// parseConfig validates the driver's own settings.
func parseConfig(dc *workload.DriverConfig) (*config, error) {
	s := driver.ParseSettings(dc, "RabbitMQ AMQP 1.0", settings)
	c := &config{format: addressFormat(s.String("common", "addressFormat")), credit: s.Int("consumer", "credit", 1)}
	if !slices.Contains([]addressFormat{formatV1, formatV2}, c.format) {
		s.Fail("common", "addressFormat", "must be v1 (RabbitMQ 3's addresses: /exchange/X/RK, /amq/queue/Q) or v2 (RabbitMQ 4's: /exchanges/X/RK, /queues/Q), got %q", c.format)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective()
	return c, nil
}
