package cli

import (
	"github.com/spf13/pflag"

	"github.com/brokerbench/brokerbench/internal/history"
)

// historyFlags are the flags of the commands whose runs are recorded in
// the history.
type historyFlags struct {
	path   string
	off    bool
	labels []string
}

func addHistoryFlags(fl *pflag.FlagSet, h *historyFlags) {
	fl.StringVar(&h.path, "history", "", "record the runs in this history store (default $BROKERBENCH_HISTORY, else $XDG_DATA_HOME/brokerbench/history.jsonl, else ~/.local/share/brokerbench/history.jsonl; see docs/history.md)")
	fl.BoolVar(&h.off, "no-history", false, "do not record the runs in the history")
	fl.StringArrayVar(&h.labels, "label", nil, "label the runs' history records, key=value (repeatable), e.g. --label ci=nightly --label pr=123")
}

// recording is where the flags say the runs are recorded.
func (h *historyFlags) recording() (history.Recording, error) {
	labels, err := history.Labels(h.labels)
	if err != nil {
		return history.Recording{}, usageError{err}
	}
	rc := history.Recording{Path: h.path, Labels: labels}
	switch {
	case h.off:
		rc.Path = ""
	case rc.Path == "":
		rc.Path = history.DefaultPath()
	}
	return rc, nil
}
