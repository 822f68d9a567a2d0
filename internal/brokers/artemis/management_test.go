package artemis

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/Azure/go-amqp"
)

// reply is a management reply with body and the succeeded flag.
func reply(body any, succeeded bool) *amqp.Message {
	return &amqp.Message{ApplicationProperties: map[string]any{"_AMQ_OperationSucceeded": succeeded}, Value: body}
}

// TestDecodeReply: management replies as Artemis sends them.
func TestDecodeReply(t *testing.T) {
	cases := []struct {
		name string
		msg  *amqp.Message
		want int64  // the result, read as a number
		err  string // a part of the error; "" for none
	}{
		// An attribute: one value in a JSON array.
		{name: "count", msg: reply("[42]", true), want: 42},
		// An operation without a result sends no body.
		{name: "void", msg: reply(nil, true)},
		// A refusal carries the broker's message.
		{name: "refused", msg: reply(`["AMQ229203: Address Does Not Exist: x"]`, false), err: "AMQ229203"},
		// A reply without the flag is a refusal too.
		{name: "no flag", msg: &amqp.Message{Value: "[1]"}, err: "refused"},
		// A body that is not a JSON array is reported as it is.
		{name: "not JSON", msg: reply("oops", true), err: `unreadable management reply "oops"`},
		// A result of the wrong type.
		{name: "wrong type", msg: reply(`["x"]`, true), err: "management reply"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n int64
			err := decodeReply(c.msg, &n)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v; want one containing %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case n != c.want:
				t.Errorf("result %d; want %d", n, c.want)
			}
		})
	}
	if err := decodeReply(reply(`["no"]`, false), nil); !errors.Is(err, errManagement) {
		t.Errorf("a refusal: %v; want errManagement", err)
	}
}

// FuzzDecodeReply: no reply body makes the decoder panic, and a reply it
// accepts as succeeded decodes into a number or fails saying so.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{"[42]", "[]", "", `["a"]`, "[1,2]", "null", "[null]"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body string, succeeded bool) {
		var n int64
		err := decodeReply(reply(body, succeeded), &n)
		if !succeeded && !errors.Is(err, errManagement) && (err == nil || !strings.Contains(err.Error(), "unreadable")) {
			t.Errorf("a failed operation's reply %q: %v", body, err)
		}
	})
}

// FuzzParseURL: no address makes the parser panic, and one it accepts
// is host:port.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"amqp://h:1", "amqps://u:p@h", "tcp://localhost:61616", "h:5672", "http://h", "amqp://", "::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		addr, _, _, err := parseURL(raw)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			t.Errorf("%q gave %q, not host:port: %v", raw, addr, err)
		}
	})
}
