package brokers

import (
	"errors"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	noDriver := func(*workload.DriverConfig, driver.Options) (driver.Driver, error) {
		return nil, errors.New("no driver")
	}
	Register(Module{Name: "test-queue", New: noDriver, Docs: "docs/drivers/test.md", NoLeader: "its nodes share nothing",
		Local:     &Local{Kind: "test-queue", Port: 1, New: func(int, int) *local.Cluster { return nil }, MaxNodes: 1, NoLinks: "its nodes resolve peers themselves", Help: "Test (test-queue) is a kind of tests."},
		NoMetrics: "none"})
	Register(Module{Name: "test-log", New: noDriver, Docs: "docs/drivers/test.md", NoLocal: "in process", NoMetrics: "none",
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true, AcksLevels: []string{"1", "all"}, Transactions: true}})
}

// TestCheck: what a module declares its broker cannot do is an input
// error naming the capability; what it can do passes.
func TestCheck(t *testing.T) {
	acks := func(v string) *workload.DriverConfig {
		return &workload.DriverConfig{Source: "d.yaml", Producer: workload.Properties{{Key: "acks", Value: v}}}
	}
	for _, tc := range []struct {
		name, broker string
		w            workload.Workload
		n            Need
		want         []string // capabilities named; none: accepted
	}{
		// A queue broker has one lane per topic and no replicas.
		{"partitions and replication on a queue", "test-queue", workload.Workload{PartitionsPerTopic: 4, ReplicationFactor: 3, ProducersPerTopic: 1, Topics: 1},
			Need{}, []string{CapPartitions, CapReplication}},
		{"one partition, no replication on a queue", "test-queue", workload.Workload{PartitionsPerTopic: 1, ReplicationFactor: 1, ProducersPerTopic: 1, Topics: 1},
			Need{}, nil},
		// A consume-only run reads what existing topics hold: a queue
		// made for the subscription would hold nothing.
		{"consume-only without replay", "test-queue", workload.Workload{Topics: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1},
			Need{Existing: true}, []string{CapReplay}},
		{"consume-only with replay", "test-log", workload.Workload{Topics: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1},
			Need{Existing: true}, nil},
		{"existing topics with producers need no replay", "test-queue", workload.Workload{Topics: 1, ProducersPerTopic: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1},
			Need{Existing: true}, nil},
		// Acks levels are the module's; a broker declaring none leaves
		// the setting to its driver's own validation.
		{"acks level declared", "test-log", workload.Workload{Topics: 1, ProducersPerTopic: 1}, Need{Driver: acks("all")}, nil},
		{"acks level not declared", "test-log", workload.Workload{Topics: 1, ProducersPerTopic: 1}, Need{Driver: acks("0")}, []string{CapAcks}},
		{"acks on a broker without levels", "test-queue", workload.Workload{Topics: 1, ProducersPerTopic: 1}, Need{Driver: acks("0")}, nil},
		// Transactions are refused, not run without, where the broker
		// has none.
		{"transactions on a broker without", "test-queue", workload.Workload{Topics: 1, ProducersPerTopic: 1, Transactions: &workload.Transactions{Size: 10}},
			Need{}, []string{CapTransactions}},
		// Faults aimed at a leader or controller on a broker that has
		// neither; a node id or a random one is taken.
		{"leader fault on a broker without leaders", "test-queue", workload.Workload{Topics: 1, ProducersPerTopic: 1,
			Faults: []workload.Fault{{Action: workload.FaultKill, Node: workload.NodeLeader, Line: 7}, {Action: workload.FaultPause, Node: workload.NodeController, Line: 8}}},
			Need{}, []string{CapLeader}},
		{"node faults on a broker without leaders", "test-queue", workload.Workload{Topics: 1, ProducersPerTopic: 1,
			Faults: []workload.Fault{{Action: workload.FaultKill, Node: "2"}, {Action: workload.FaultKill, Node: workload.NodeRandom}}}, Need{}, nil},
		{"leader fault on a broker that does not declare", "test-log", workload.Workload{Topics: 1, ProducersPerTopic: 1,
			Faults: []workload.Fault{{Action: workload.FaultKill, Node: workload.NodeLeader}}}, Need{}, nil},
		{"transactions on a broker with", "test-log", workload.Workload{Topics: 1, ProducersPerTopic: 1, Transactions: &workload.Transactions{Size: 10}}, Need{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			w.Source = "w.yaml"
			tc.n.Workload = &w
			err := Check(tc.broker, tc.n)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupported) || !errors.Is(err, workload.ErrInvalid) {
				t.Fatalf("error %v: want one wrapping ErrUnsupported and workload.ErrInvalid", err)
			}
			for _, c := range tc.want {
				if !strings.Contains(err.Error(), `"`+c+`" capability`) {
					t.Errorf("error %q does not name the %q capability", err, c)
				}
			}

		})
	}
	if err := Check("nope", Need{Workload: &workload.Workload{}}); !errors.Is(err, ErrUnknownDriver) {
		t.Errorf("unknown driver: %v", err)
	}
}

// TestCheckLeaderFaults: a fault aimed at a leader or controller of a
// broker that has neither is refused where it is, with the module's
// reason.
func TestCheckLeaderFaults(t *testing.T) {
	w := &workload.Workload{Source: "w.yaml", Topics: 1, ProducersPerTopic: 1,
		Faults: []workload.Fault{{Action: workload.FaultKill, Node: workload.NodeLeader, Line: 7}, {Action: workload.FaultPause, Node: workload.NodeController, Line: 8}}}
	err := Check("test-queue", Need{Workload: w})
	for _, want := range []string{"w.yaml:7: faults: ", "aims at the leader, and its nodes share nothing",
		"w.yaml:8: faults: ", "aims at the controller, and its nodes share nothing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

// TestCheckLocal: a local cluster larger than the kind runs, links the
// kind cannot carry, or a broker without a local kind are refused,
// naming the capability.
func TestCheckLocal(t *testing.T) {
	for _, tc := range []struct {
		broker string
		nodes  int
		links  bool
		want   string // capability named; "": accepted
	}{
		{"test-queue", 1, false, ""},
		{"test-queue", 3, false, CapLocalNodes},
		{"test-queue", 1, true, CapLinks},
		{"test-log", 1, false, CapLocal},
	} {
		err := CheckLocal(tc.broker, tc.nodes, "--local-brokers 3", tc.links)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s, %d nodes, links %v: refused: %v", tc.broker, tc.nodes, tc.links, err)
		case tc.want != "" && (!errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"`+tc.want+`" capability`)):
			t.Errorf("%s, %d nodes, links %v: %v; want the %q capability named", tc.broker, tc.nodes, tc.links, err, tc.want)
		}
	}
}

// TestRegisterRefusesIncompleteModules: a module without what every
// broker declares is refused when registered, not found missing later.
func TestRegisterRefusesIncompleteModules(t *testing.T) {
	whole := Module{Name: "test-whole", New: func(*workload.DriverConfig, driver.Options) (driver.Driver, error) { return nil, nil },
		NoLocal: "x", NoMetrics: "x", Docs: "docs/drivers/x.md"}
	for name, change := range map[string]func(*Module){
		"no name":                     func(m *Module) { m.Name = "" },
		"taken name":                  func(m *Module) { m.Name = "test-log" },
		"no factory":                  func(m *Module) { m.New = nil },
		"no local kind and no reason": func(m *Module) { m.NoLocal = "" },
		"no metrics and no reason":    func(m *Module) { m.NoMetrics = "" },
		"no docs page":                func(m *Module) { m.Docs = "" },
		"another broker's local kind": func(m *Module) {
			m.NoLocal, m.Local = "", &Local{Kind: "test-queue", Port: 1, New: func(int, int) *local.Cluster { return nil }, MaxNodes: 1, Help: "Test (test-queue) is a kind of tests."}
		},
		"a local kind without help": func(m *Module) {
			m.NoLocal, m.Local = "", &Local{Kind: "test-helpless", Port: 1, New: func(int, int) *local.Cluster { return nil }, MaxNodes: 1}
		},
	} {
		m := whole
		change(&m)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			Register(m)
		}()
	}
}
