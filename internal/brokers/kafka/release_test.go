package kafka

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
)

// TestRelease: releases from 3.7.0 on are run, each from a directory of
// its own in the cache; older ones (ZooKeeper's) and other strings are
// refused, saying why.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused string // what the refusal says; "": taken
	}{
		{"3.9.1", ""},
		{"3.7.0", ""},
		{"4.0.0", ""},
		{"10.0.1", ""},
		{"3.6.2", "3.7.0 or newer"},
		{"2.8.2", "3.7.0 or newer"},
		{"4.1", "want major.minor.patch"},
		{"latest", "want major.minor.patch"},
		{"4.1.0-rc1", "want major.minor.patch"},
	} {
		k, err := Kind{}.Release(tc.version)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: %v, want a refusal saying %q", tc.version, err, tc.refused)
			}
			continue
		}
		if err != nil || k.Version() != tc.version {
			t.Errorf("%s: %v, %v", tc.version, k, err)
		}
	}
}

// TestReleaseRunsItsOwnJars: a node of release 3.9.1 runs with that
// release's jars and JMX agent, and the release's POM names it and leaves
// out the log4j 1 binding of the 3.x releases.
func TestReleaseRunsItsOwnJars(t *testing.T) {
	k, err := local.WithRelease(Kind{}, "3.9.1")
	if err != nil {
		t.Fatal(err)
	}
	c := &local.Cluster{Kind: k, CacheDir: "/cache", StateDir: t.TempDir(), Brokers: 1}
	n := k.Layout(c)[0]
	argv := strings.Join(k.Command(c, n), " ")
	for _, want := range []string{filepath.Join("/cache", "kafka-3.9.1", "lib", "*"), filepath.Join("/cache", "kafka-3.9.1", "agent")} {
		if !strings.Contains(argv, want) {
			t.Errorf("command %q lacks %q", argv, want)
		}
	}
	if strings.Contains(argv, "kafka-"+Version) {
		t.Errorf("command %q names the default release's directory", argv)
	}
	pom := kafkaPOM("3.9.1")
	if strings.Count(pom, "<version>3.9.1</version>") != 2 || strings.Count(pom, "<artifactId>slf4j-reload4j</artifactId>") != 2 {
		t.Errorf("POM of 3.9.1:\n%s", pom)
	}
}
