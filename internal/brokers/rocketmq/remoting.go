package rocketmq

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// RocketMQ's remoting protocol, which name servers and brokers serve for
// administration (mqadmin's protocol): a frame is a 4-byte length of what
// follows, a 4-byte word holding the header's serialisation (0: JSON) in
// its high byte and the header's length in the other three, the header,
// then the body. A request and its response share an opaque id; a
// response has bit 0 of its flag set and a response code (0: success).

// Request codes of the remoting protocol that the driver sends
// (RocketMQ's RequestCode).
const (
	codeQueryConsumerOffset     = 14
	codeUpdateConsumerOffset    = 15
	codeUpdateAndCreateTopic    = 17
	codeGetBrokerConfig         = 26
	codeGetBrokerRuntimeInfo    = 28
	codeGetMaxOffset            = 30
	codeGetMinOffset            = 31
	codeGetRouteInfoByTopic     = 105
	codeUpdateSubscriptionGroup = 200
	codeDeleteSubscriptionGroup = 207
	codeDeleteTopicInBroker     = 215
	codeDeleteTopicInNamesrv    = 216
)

// Response codes the driver tells apart (RocketMQ's ResponseCode).
const (
	respSuccess       = 0
	respTopicNotExist = 17
	respQueryNotFound = 22
)

// maxFrame bounds the frames the driver reads: a route or a broker's
// configuration is a few kilobytes.
const maxFrame = 16 << 20

// command is a remoting request or response.
type command struct {
	Code      int               `json:"code"`
	Language  string            `json:"language"`
	Version   int               `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int               `json:"flag"`
	Remark    string            `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
	Body      []byte            `json:"-"`
}

// responseFlag marks a response (RemotingCommand's RPC_TYPE bit).
const responseFlag = 1

// remotingVersion is the client version the driver's requests carry:
// RocketMQ 5.3.3's (MQVersion.Version.V5_3_3's ordinal).
const remotingVersion = 479

var opaques atomic.Int32

// encodeFrame returns c as one frame, its header in JSON.
func encodeFrame(c *command) ([]byte, error) {
	header, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 8, 8+len(header)+len(c.Body))
	binary.BigEndian.PutUint32(frame[0:4], uint32(4+len(header)+len(c.Body)))
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(header))) // serialisation 0: JSON
	return append(append(frame, header...), c.Body...), nil
}

// decodeFrame reads one frame's content, after its length field: the
// JSON header and the body. It refuses the binary ("ROCKETMQ")
// serialisation and lengths that do not add up.
func decodeFrame(content []byte) (*command, error) {
	if len(content) < 4 {
		return nil, fmt.Errorf("remoting frame of %d bytes: too short", len(content))
	}
	word := binary.BigEndian.Uint32(content[0:4])
	if kind := word >> 24; kind != 0 {
		return nil, fmt.Errorf("remoting frame serialised as type %d, not JSON", kind)
	}
	n := int(word & 0xFFFFFF)
	if n > len(content)-4 {
		return nil, fmt.Errorf("remoting frame header of %d bytes in a frame of %d", n, len(content))
	}
	c := &command{}
	if err := json.Unmarshal(content[4:4+n], c); err != nil {
		return nil, fmt.Errorf("remoting frame header: %w", err)
	}
	c.Body = content[4+n:]
	return c, nil
}

// remotingError is a response other than success.
type remotingError struct {
	addr   string
	code   int // the request's
	status int // the response's
	remark string
}

func (e *remotingError) Error() string {
	return fmt.Sprintf("%s: request %d: response code %d: %s", e.addr, e.code, e.status, e.remark)
}

// hasResponse says whether err is a remoting response with status code.
func hasResponse(err error, status int) bool {
	var re *remotingError
	return errors.As(err, &re) && re.status == status
}

// invoke sends a request to the name server or broker at addr on a
// connection of its own and returns its successful response. dial
// connects; the call gives up after 10 s unless ctx ends sooner.
func invoke(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, code int, ext map[string]string, body []byte) (*command, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	req := &command{Code: code, Language: "GO", Version: remotingVersion, Opaque: opaques.Add(1), ExtFields: ext, Body: body}
	frame, err := encodeFrame(req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	for {
		resp, err := readFrame(conn)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", addr, ctx.Err())
			}
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		if resp.Flag&responseFlag == 0 || resp.Opaque != req.Opaque {
			continue // a request of the server's own, or another answer
		}
		if resp.Code != respSuccess {
			return nil, &remotingError{addr: addr, code: code, status: resp.Code, remark: resp.Remark}
		}
		return resp, nil
	}
}

// readFrame reads one frame from r.
func readFrame(r io.Reader) (*command, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrame {
		return nil, fmt.Errorf("remoting frame of %d bytes: more than %d", n, maxFrame)
	}
	content := make([]byte, n)
	if _, err := io.ReadFull(r, content); err != nil {
		return nil, err
	}
	return decodeFrame(content)
}

// extInt reads a number a response carries in its header.
func extInt(c *command, key string) (int64, error) {
	v, err := strconv.ParseInt(c.ExtFields[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("response field %s: %w", key, err)
	}
	return v, nil
}
