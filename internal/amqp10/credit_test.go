package amqp10

import (
	"fmt"
	"slices"
	"testing"
)

// TestGrantsAccept: the credit a consumer gives back, message by
// message.
func TestGrantsAccept(t *testing.T) {
	for _, c := range []struct {
		name   string
		credit Credit
		want   []uint32 // after each of len(want) acceptances
	}{
		// Half the window at a time, once that many are accepted.
		{name: "half", credit: Credit{Window: 4}, want: []uint32{0, 2, 0, 2, 0, 2}},
		// The whole window, once every message granted was accepted.
		{name: "when spent", credit: Credit{Window: 3, WhenSpent: true}, want: []uint32{0, 0, 3, 0, 0, 3}},
		// A window of 1 is given back message by message either way.
		{name: "window 1", credit: Credit{Window: 1}, want: []uint32{1, 1, 1}},
		{name: "window 1 when spent", credit: Credit{Window: 1, WhenSpent: true}, want: []uint32{1, 1, 1}},
		// A window below 1 is taken as 1.
		{name: "window 0", credit: Credit{}, want: []uint32{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGrants(c.credit)
			var got []uint32
			for range c.want {
				got = append(got, g.accept())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("credit given back: %v; want %v", got, c.want)
			}
		})
	}
}

// receiverModel is go-amqp 1.7.0's receiver credit as the consumer uses it
// (manual credit): the credit left is an unsigned count that each
// transfer decrements, and credit issued is sent as that count plus the
// credit added, in a flow only when the sum is not 0 (creditor.FlowBits,
// Receiver.mux, Receiver.muxReceive).
type receiverModel struct {
	linkCredit    uint32
	creditsToAdd  uint32
	deliveryCount uint32
	queued        int // received by the link, not yet taken by Receive
}

// flow returns the flow go-amqp sends, if any, after credit was issued.
func (r *receiverModel) flow() (count, credit uint32, ok bool) {
	credits := r.creditsToAdd + r.linkCredit
	r.creditsToAdd = 0
	if credits == 0 {
		return 0, 0, false
	}
	r.linkCredit = credits
	return r.deliveryCount, credits, true
}

func (r *receiverModel) transfer() {
	r.deliveryCount++
	r.linkCredit--
	r.queued++
}

// queueModel is a queue with an endless backlog behind a link. The queue
// hands its credit's worth of messages to the connection, which sends
// them later. rebaseOnSent models RabbitMQ 3's AMQP 1.0 plugin
// (rabbit_amqp1_0_outgoing_link:flow), whose new credit is the flow's
// delivery count plus its credit less the transfers sent, leaving out
// those on their way; without it, the broker honours the credit.
type queueModel struct {
	rebaseOnSent bool
	sent         uint32 // transfers sent
	onTheWay     uint32 // handed to the connection, not yet sent
	credit       int64  // the queue's
}

func (q *queueModel) flow(count, credit uint32) {
	q.credit = int64(count) + int64(credit) - int64(q.sent)
	if !q.rebaseOnSent {
		q.credit -= int64(q.onTheWay)
	}
}

func (q *queueModel) dispatch() {
	if q.credit > 0 {
		q.onTheWay += uint32(q.credit)
		q.credit = 0
	}
}

// TestGrantsKeepLinkFlowing: a consumer taking messages from a queue
// with a backlog, at several paces, through go-amqp's credit arithmetic,
// keeps receiving, and never has more than its window received and not
// accepted, nor grants more. Each step, the queue hands its credit to
// the connection, the consumer takes and accepts messages (issuing
// credit, which go-amqp sends in a flow), the broker takes the flows,
// and then sends what was on its way: a flow crosses messages on their
// way whenever the consumer grants credit while the broker still has
// some.
func TestGrantsKeepLinkFlowing(t *testing.T) {
	const (
		window = 1000
		total  = 100_000
	)
	paces := []int{1, 300, 500, 700, 1000, 2500}
	for _, c := range []struct {
		name        string
		rebase      bool
		whenSpent   bool
		paces       []int // all when nil
		wantFlowing bool
	}{
		// A broker that honours the credit: half the window at a time.
		{name: "honours credit", wantFlowing: true},
		{name: "honours credit, when spent", whenSpent: true, wantFlowing: true},
		// RabbitMQ 3: credit granted once spent never crosses a delivery.
		{name: "rabbitmq 3, when spent", rebase: true, whenSpent: true, wantFlowing: true},
		// What the runs saw, with a consumer taking half the window a
		// step: the broker sends more than granted, and go-amqp's
		// unsigned credit left wraps (then the link stalls, or is
		// granted nearly 2^32).
		{name: "rabbitmq 3, half", rebase: true, paces: []int{500}},
	} {
		if c.paces == nil {
			c.paces = paces
		}
		for _, pace := range c.paces {
			t.Run(fmt.Sprintf("%s/pace %d", c.name, pace), func(t *testing.T) {
				err := runLink(window, total, pace, c.rebase, Credit{Window: window, WhenSpent: c.whenSpent})
				if flowing := err == nil; flowing != c.wantFlowing {
					t.Errorf("flowing %v (%v); want %v", flowing, err, c.wantFlowing)
				}
			})
		}
	}
}

// runLink runs the models until the consumer accepted total messages,
// taking at most pace a step; it returns why it could not.
func runLink(window, total, pace int, rebase bool, credit Credit) error {
	g := newGrants(credit)
	r := &receiverModel{creditsToAdd: uint32(g.granted)}
	q := &queueModel{rebaseOnSent: rebase}
	var flows [][2]uint32
	if count, cr, ok := r.flow(); ok {
		flows = append(flows, [2]uint32{count, cr})
	}
	accepted, idle := 0, 0
	for accepted < total {
		q.dispatch()
		took := 0
		for ; took < pace && r.queued > 0; took++ {
			r.queued--
			accepted++
			r.creditsToAdd += g.accept()
			if count, cr, ok := r.flow(); ok {
				if cr > uint32(window) {
					return fmt.Errorf("a flow grants %d, more than the window %d, after %d messages", cr, window, accepted)
				}
				flows = append(flows, [2]uint32{count, cr})
			}
		}
		for _, f := range flows {
			q.flow(f[0], f[1])
		}
		flows = flows[:0]
		for ; q.onTheWay > 0; q.onTheWay-- {
			q.sent++
			r.transfer()
		}
		if unaccepted := int(r.deliveryCount) - accepted; unaccepted > window {
			return fmt.Errorf("%d messages received and not accepted, more than the window %d", unaccepted, window)
		}
		if took == 0 && q.onTheWay == 0 && q.credit <= 0 {
			if idle++; idle > 3 {
				return fmt.Errorf("stalled after %d messages: credit left %d (unsigned), broker's credit %d", accepted, r.linkCredit, q.credit)
			}
		} else {
			idle = 0
		}
	}
	return nil
}
