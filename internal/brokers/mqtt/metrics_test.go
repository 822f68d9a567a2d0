package mqtt

import "testing"

// TestParseSys: Mosquitto's $SYS values, as counters and gauges.
func TestParseSys(t *testing.T) {
	counters, gauges, err := ParseSys(map[string][]byte{
		"$SYS/broker/bytes/received": []byte("1234"), "$SYS/broker/clients/connected": []byte("3"),
		"$SYS/broker/version": []byte("mosquitto version 2.0.11"), "$SYS/broker/uptime": []byte("12 seconds"),
	})
	if err != nil || counters["mqtt_bytes_in_total"] != 1234 || gauges["mqtt_clients_connected"] != 3 || len(counters)+len(gauges) != 2 {
		t.Errorf("%v %v %v", counters, gauges, err)
	}
	if _, _, err := ParseSys(map[string][]byte{"$SYS/broker/version": []byte("x")}); err == nil {
		t.Error("no known topic: no error")
	}
}

// FuzzParseSys: any topic and value give counters and gauges or an
// error, never both empty without an error.
func FuzzParseSys(f *testing.F) {
	f.Add("$SYS/broker/bytes/received", []byte("12"))
	f.Add("$SYS/broker/heap/current", []byte(" 7e3 "))
	f.Fuzz(func(t *testing.T, topic string, value []byte) {
		c, g, err := ParseSys(map[string][]byte{topic: value})
		if err == nil && len(c)+len(g) == 0 {
			t.Error("nothing read and no error")
		}
	})
}
