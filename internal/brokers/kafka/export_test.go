package kafka

// JMXSeries returns the series brokerbench reads of a Kafka broker
// (kafkaJMXSeries), for the test of a live broker's endpoint.
func JMXSeries() []string {
	var names []string
	for _, s := range kafkaJMXSeries {
		names = append(names, s.series)
	}
	return names
}
