package amqp10

// Credit is how a consumer grants its link's credit.
type Credit struct {
	// Window is the messages the broker may send the consumer ahead of
	// its acceptances (at least 1).
	Window int
	// WhenSpent has the consumer grant credit again only once it received
	// every message it had granted credit for, instead of giving back
	// half the window at a time while the broker may still be sending.
	// It is for a broker that rebases a flow on the deliveries it already
	// sent, not on those it has on their way: RabbitMQ 3's AMQP 1.0
	// plugin then sends both what was on its way and the new credit
	// (rabbitmq-server issue 2597), more than granted, and go-amqp, whose
	// count of the credit left is unsigned, either sends no flow again
	// (the link stalls) or grants nearly 2^32. A flow sent once the
	// credit is spent has nothing on its way to cross; the cost is a
	// round trip to the broker per window.
	WhenSpent bool
}

// grants decides, message by message, the credit a consumer gives its
// link: the link's credit is at most the window less the messages
// received and not yet accepted. It is not safe for concurrent use.
type grants struct {
	window, batch uint64
	// granted and accepted are counts since the link attached: the
	// credit granted, and the messages accepted.
	granted, accepted uint64
}

func newGrants(c Credit) *grants {
	g := &grants{window: uint64(max(1, c.Window))}
	g.batch = max(1, g.window/2)
	if c.WhenSpent {
		g.batch = g.window
	}
	g.granted = g.window
	return g
}

// accept records a message accepted and returns the credit to give the
// broker now (go-amqp's Receiver.IssueCredit), 0 for none: the credit
// that makes the window whole again (every message received has been
// accepted), once that is a batch.
func (g *grants) accept() uint32 {
	g.accepted++
	due := g.accepted + g.window - g.granted
	if due < g.batch {
		return 0
	}
	g.granted += due
	return uint32(due)
}
