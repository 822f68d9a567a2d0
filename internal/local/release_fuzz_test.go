package local

import (
	"strings"
	"testing"
)

// FuzzCheckRelease: any string is a release or refused, never a panic;
// a release taken is three numbers, and one refused says which.
func FuzzCheckRelease(f *testing.F) {
	for _, s := range []string{"3.9.1", "3.6.2", "10.0.0", "4.1", "v2.11.17", "", "3.7.0-rc1", "99999999999999999999.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, version string) {
		err := CheckRelease("Kafka", version, "3.7", "KRaft")
		if err == nil && strings.Count(version, ".") != 2 {
			t.Errorf("%q taken", version)
		}
		if err != nil && !strings.Contains(err.Error(), "Kafka release") {
			t.Errorf("%q: %v does not say which release", version, err)
		}
	})
}
