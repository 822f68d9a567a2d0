package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// releasedKind is fakeKind at a release of its own: its nodes' command
// lines carry the release, as a broker's class path does.
type releasedKind struct {
	fakeKind
	release string
}

func (k releasedKind) Version() string { return k.release }

func (k releasedKind) Release(v string) (Kind, error) {
	if v == "0.9" {
		return nil, errors.New("fake release 0.9 is too old")
	}
	return releasedKind{release: v}, nil
}

func (k releasedKind) Command(c *Cluster, n *Node) []string {
	return append(k.fakeKind.Command(c, n), "release-"+k.release)
}

func TestWithRelease(t *testing.T) {
	base := releasedKind{release: "1.0"}
	for _, tc := range []struct {
		name    string
		kind    Kind
		version string
		want    string // the kind's version; "" for an error
	}{
		{"no version: the kind itself", base, "", "1.0"},
		{"its own version: the kind itself", base, "1.0", "1.0"},
		{"another release", base, "2.0", "2.0"},
		{"a release the kind refuses", base, "0.9", ""},
		{"a kind without releases runs its own alone", fakeKind{}, "2.0", ""},
		{"a kind without releases, its own version", fakeKind{}, "1.0", "1.0"},
	} {
		k, err := WithRelease(tc.kind, tc.version)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: %s, want an error", tc.name, k.Version())
		case tc.want != "" && (err != nil || k.Version() != tc.want):
			t.Errorf("%s: %v, %v; want release %s", tc.name, k, err, tc.want)
		}
	}
}

// A cluster of another release is another shape: Up keeps it unless
// told to replace it, records the release, and a node restarted from
// the record runs the release recorded, whatever the kind asked.
func TestUpTellsReleasesApart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	at := func(release string) *Cluster {
		return &Cluster{Kind: releasedKind{release: release}, StateDir: dir, Brokers: 1, StartedBy: StartedByUser, Log: &syncBuffer{}}
	}
	old := at("2.0")
	st, err := old.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = at("1.0").Down() }()
	if st.Version != "2.0" || st.Shape().Version != "2.0" {
		t.Fatalf("status %+v: want release 2.0", st)
	}
	_, err = at("1.0").Up(ctx)
	var re *ReplaceError
	if !errors.As(err, &re) || re.Recorded.Version != "2.0" || re.Asked.Version != "1.0" || !strings.Contains(err.Error(), "release 2.0") {
		t.Fatalf("Up of release 1.0 over 2.0: %v, want a ReplaceError naming both releases", err)
	}
	if got := at("1.0").Status(); got.Version != "2.0" || !got.Running {
		t.Fatalf("a cluster asked for 1.0 reads the record as %+v, want release 2.0 running", got)
	}
	if _, err := at("2.0").Up(ctx); err != nil {
		t.Fatalf("Up of the same release: %v", err)
	}

	// Restarted from the record by a cluster asked for the default
	// release: the node runs the release recorded.
	reader := at("1.0")
	if err := reader.Down(); err != nil {
		t.Fatal(err)
	}
	if err := reader.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pid, ok := reader.Node(1).PID()
	if !ok {
		t.Fatal("node 1 did not restart")
	}
	if cmd := cmdline(t, pid); !slices.Contains(cmd, "release-2.0") {
		t.Errorf("restarted node runs %q, want release 2.0", cmd)
	}

	replaced := at("1.0")
	replaced.Replace = true
	if st, err := replaced.Up(ctx); err != nil || st.Version != "1.0" {
		t.Fatalf("Up of release 1.0 with Replace: %+v, %v", st, err)
	}
}

// cmdline is process pid's command line.
func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}
