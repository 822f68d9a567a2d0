package artemis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/Azure/go-amqp"
)

// management sends Artemis management requests over one AMQP connection
// and reads their replies: a request is a message to the management
// address naming a resource ("broker", "address.NAME") and an operation
// with its parameters as a JSON array, or an attribute; the reply, sent
// to the request's reply-to address, says whether it succeeded and
// carries the result (or the failure's message) as a JSON array. It is
// safe for concurrent use: requests are made one at a time.
type management struct {
	mu      sync.Mutex
	conn    *amqp.Conn
	sender  *amqp.Sender
	replies *amqp.Receiver
	next    uint64
}

// errManagement wraps the broker's refusal of a management operation;
// its message is the broker's ("AMQ229203: Address Does Not Exist").
var errManagement = errors.New("Artemis refused the management request")

// newManagement opens the management link of conn: a sender to address
// and a receiver on a temporary address of the broker's, for replies.
func newManagement(ctx context.Context, conn *amqp.Conn, address string) (*management, error) {
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return nil, err
	}
	replies, err := sess.NewReceiver(ctx, "", &amqp.ReceiverOptions{DynamicAddress: true, Credit: 10})
	if err != nil {
		return nil, fmt.Errorf("open a reply address for management requests: %w", err)
	}
	sender, err := sess.NewSender(ctx, address, nil)
	if err != nil {
		return nil, fmt.Errorf("open the management address %q: %w", address, err)
	}
	return &management{conn: conn, sender: sender, replies: replies}, nil
}

// invoke runs operation on resource with params, decoding the result
// into out when out is not nil.
func (m *management) invoke(ctx context.Context, resource, operation string, out any, params ...any) error {
	if params == nil {
		params = []any{}
	}
	return m.request(ctx, map[string]any{"_AMQ_ResourceName": resource, "_AMQ_OperationName": operation}, params, out)
}

// attribute reads an attribute of resource into out.
func (m *management) attribute(ctx context.Context, resource, attribute string, out any) error {
	return m.request(ctx, map[string]any{"_AMQ_ResourceName": resource, "_AMQ_Attribute": attribute}, []any{}, out)
}

// request sends one request and waits for its reply, skipping replies to
// earlier requests whose caller gave up.
func (m *management) request(ctx context.Context, props map[string]any, params []any, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	id := fmt.Sprintf("brokerbench-%d", m.next)
	replyTo := m.replies.Address()
	msg := &amqp.Message{Properties: &amqp.MessageProperties{MessageID: id, ReplyTo: &replyTo}, ApplicationProperties: props, Value: string(body)}
	if err := m.sender.Send(ctx, msg, nil); err != nil {
		return err
	}
	for {
		reply, err := m.replies.Receive(ctx, nil)
		if err != nil {
			return err
		}
		_ = m.replies.AcceptMessage(ctx, reply)
		if reply.Properties == nil || reply.Properties.CorrelationID != id {
			continue
		}
		return decodeReply(reply, out)
	}
}

// decodeReply reads a management reply: its result into out, or the
// broker's reason for failing. The result is the body's JSON array, of
// one value or none (an operation without a result sends no body).
func decodeReply(reply *amqp.Message, out any) error {
	text, _ := reply.Value.(string)
	if text == "" && len(reply.Data) > 0 {
		text = string(reply.Data[0])
	}
	// An operation without a result (void) replies without a body.
	var result []json.RawMessage
	if text == "" {
		text = "[]"
	}
	if err := json.Unmarshal([]byte(text), &result); err != nil || len(result) > 1 {
		return fmt.Errorf("unreadable management reply %q", text)
	}
	if ok, _ := reply.ApplicationProperties["_AMQ_OperationSucceeded"].(bool); !ok {
		var reason string
		if len(result) == 1 && json.Unmarshal(result[0], &reason) == nil {
			return fmt.Errorf("%w: %s", errManagement, reason)
		}
		return fmt.Errorf("%w: %s", errManagement, strings.TrimSpace(text))
	}
	if out == nil || len(result) == 0 {
		return nil
	}
	if err := json.Unmarshal(result[0], out); err != nil {
		return fmt.Errorf("management reply %q: %w", text, err)
	}
	return nil
}
