package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// teardownBounded tears down, but returns as soon as cfg.Abandon is done,
// leaving a warning that names what may remain.
func (r *run) teardownBounded(created []string) {
	done := make(chan []string, 1)
	go func() { done <- r.teardown(created) }()
	select {
	case warnings := <-done:
		r.res.Warnings = append(r.res.Warnings, warnings...)
	case <-r.cfg.Abandon.Done():
		w := "teardown abandoned: clients were not closed"
		if len(created) > 0 && !r.cfg.KeepTopics {
			w += fmt.Sprintf(" and topics %s may remain (remove them with 'brokerbench clean')", strings.Join(created, ", "))
		}
		r.res.Warnings = append(r.res.Warnings, w)
	}
}

// teardown closes the run's producers and consumers and deletes the topics
// it created (unless Config.KeepTopics), telling the journal of each one
// deleted. It returns warnings for topics it could not delete. It can
// take as long as the broker does; teardownBounded is how the run may
// stop waiting for it.
func (r *run) teardown(created []string) []string {
	var warnings []string
	for _, p := range r.producers {
		if p.prod != nil {
			p.prod.Close()
		}
	}
	for _, c := range r.closers {
		c()
	}
	if r.cfg.KeepTopics {
		return warnings
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range created {
		err := r.cfg.Driver.DeleteTopic(ctx, t)
		if err != nil && !errors.Is(err, driver.ErrTopicNotFound) {
			warnings = append(warnings, err.Error())
			continue
		}
		// A topic that is not there (its create failed) is not left
		// behind either.
		if r.cfg.Journal != nil {
			r.cfg.Journal.DeletedTopic(t)
		}
	}
	return warnings
}
