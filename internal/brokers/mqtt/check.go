package mqtt

import (
	"context"
	"errors"
	"fmt"

	"github.com/eclipse/paho.golang/paho"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var _ driver.Checker = (*Driver)(nil)

// publishOverhead bounds what a PUBLISH packet adds to its payload: its
// fixed header, topic name (up to 100 bytes here), packet id and
// properties.
const publishOverhead = 128

// mqttMaxPacket is the largest packet MQTT can encode.
const mqttMaxPacket = 268435455

// Check implements driver.Checker: a message with its packet's overhead
// must fit the largest packet the server accepts (its CONNACK's Maximum
// Packet Size, else MQTT's limit), and every existing topic must have
// been created.
func (d *Driver) Check(ctx context.Context, spec driver.CheckSpec) error {
	s, err := d.connect(ctx, "check", nil, nil, paho.ClientConfig{})
	if err != nil {
		return err
	}
	limit := s.maxPacket
	s.close()
	var errs []error
	invalid := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", workload.ErrInvalid, fmt.Sprintf(format, args...)))
	}
	packet := int64(spec.MessageSize) + publishOverhead
	switch {
	case limit > 0 && packet > int64(limit):
		invalid("messages of %d bytes (%d with the packet's overhead) exceed the server's maximum packet size of %d bytes: raise it on the server (Mosquitto: max_packet_size), or send smaller messages",
			spec.MessageSize, packet, limit)
	case packet > mqttMaxPacket:
		invalid("messages of %d bytes exceed MQTT's largest packet, %d bytes: send smaller messages", spec.MessageSize, mqttMaxPacket)
	}
	for _, t := range spec.ExistingTopics {
		if err := d.exists(ctx, t); errors.Is(err, driver.ErrTopicNotFound) {
			invalid("topic %q was not created by brokerbench on %s: leave out --topic to let the run create its own", t, d.cfg.addr)
		} else if err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
