package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
)

// refusingCreate is a driver whose broker refuses to create topics (a
// replication factor above its broker count).
type refusingCreate struct{ driver.Driver }

func (refusingCreate) CreateTopic(context.Context, driver.TopicSpec) error {
	return errors.New("INVALID_REPLICATION_FACTOR")
}

// topicJournal records the topic calls of a run.
type topicJournal struct {
	mu                sync.Mutex
	creating, deleted []string
}

func (j *topicJournal) CreatingTopic(name string) {
	j.mu.Lock()
	j.creating = append(j.creating, name)
	j.mu.Unlock()
}
func (j *topicJournal) DeletedTopic(name string) {
	j.mu.Lock()
	j.deleted = append(j.deleted, name)
	j.mu.Unlock()
}
func (j *topicJournal) Interval(results.Interval, results.Histograms) {}

// TestRefusedTopicIsNotLeftBehind: a topic whose creation failed is
// looked for at teardown, and, not being there, recorded as gone: the
// registry of dead runs' topics must not keep it forever.
func TestRefusedTopicIsNotLeftBehind(t *testing.T) {
	j := &topicJournal{}
	_, err := Run(context.Background(), Config{Workload: baseWorkload(), Driver: refusingCreate{memory.NewBroker().NewDriver()}, Journal: j})
	if err == nil {
		t.Fatal("a run whose topic could not be created succeeded")
	}
	if len(j.creating) != 1 || !slices.Equal(j.creating, j.deleted) {
		t.Errorf("creating %v, deleted %v: the refused topic must be recorded as gone", j.creating, j.deleted)
	}
}
