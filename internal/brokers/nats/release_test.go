package nats

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
)

// TestRelease: releases from 2.10.0 on are built and run, each from a
// directory of its own in the cache; older ones and other strings are
// refused, saying why.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused string // what the refusal says; "": taken
	}{
		{"2.10.27", ""},
		{"2.11.17", ""},
		{"3.0.0", ""},
		{"2.9.25", "2.10.0 or newer"},
		{"v2.11.17", "want major.minor.patch"},
		{"2.11", "want major.minor.patch"},
	} {
		k, err := local.WithRelease(Kind{}, tc.version)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: %v, want a refusal saying %q", tc.version, err, tc.refused)
			}
			continue
		}
		if err != nil || k.Version() != tc.version {
			t.Errorf("%s: %v, %v", tc.version, k, err)
			continue
		}
		c := &local.Cluster{Kind: k, CacheDir: "/cache", StateDir: t.TempDir(), Brokers: 1}
		if argv := k.Command(c, k.Layout(c)[0]); argv[0] != filepath.Join("/cache", "nats-server-"+tc.version, "nats-server") {
			t.Errorf("%s runs %s", tc.version, argv[0])
		}
	}
}
