package artemis

import (
	"strings"
	"testing"
)

// TestDiskLimit: the disk limit "artemis create" writes (90% used) is
// replaced by 1 GB free, once, however many times the node is configured.
func TestDiskLimit(t *testing.T) {
	created := "<core>\n      <max-disk-usage>90</max-disk-usage>\n      <journal-type>NIO</journal-type>\n</core>\n"
	once := string(diskLimit([]byte(created)))
	twice := string(diskLimit([]byte(once)))
	if once != twice {
		t.Errorf("configured twice differs:\n%s\n%s", once, twice)
	}
	for _, want := range []string{"<max-disk-usage>100</max-disk-usage>", "<min-disk-free>1GB</min-disk-free>", "<journal-type>NIO</journal-type>"} {
		if strings.Count(twice, want) != 1 {
			t.Errorf("broker.xml has %q %d times, want once:\n%s", want, strings.Count(twice, want), twice)
		}
	}
	if strings.Contains(twice, ">90<") {
		t.Errorf("the 90%% limit is still there:\n%s", twice)
	}
}
