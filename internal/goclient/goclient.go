// Package goclient is what a test and the Go-client driver say to each other. The driver
// (internal/goclient/driver) is a child process that runs the pinned Apache RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2); internal/goclient/goclienttest starts it from a
// test and offers the client's API through it.
//
// Why a child process: the pinned client has data races of its own (Shutdown against its own
// rebalance goroutine, the orderly consumer's process queue, PullFrom against the rebalance),
// which the race detector reports in whatever test binary the client runs in, whatever the
// broker does. The driver is built without -race, so a test under -race checks the broker
// (in the test's own process) and not the client.
//
// The two talk net/rpc with its JSON codec over pipes, in both directions:
//
//	test → driver   "Driver.<Method>" (DriverService): create clients, send, pull, administer
//	driver → test   "Test.<Method>" (TestService): the client's callbacks (consume, local
//	                transactions, queue allocation, async send results), answered by the test
//
// The driver's descriptors (os/exec ExtraFiles; 0-2 are its stdin, stdout and stderr, which
// carry nothing but the client's log):
//
//	3  requests from the test        4  its answers to them
//	5  the test's callback answers    6  its callback requests
//
// This package holds the vocabulary only: options, messages and results as plain JSON-able
// values, and their conversions to and from the client's primitive types (package primitive
// starts no goroutine and carries no client state). Nothing here starts a client.
package goclient

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	clienterrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// Service names on each side of the pipes.
const (
	DriverService = "Driver"
	TestService   = "Test"
)

// The driver's file descriptors, as the package comment draws them.
const (
	FDRequests       = 3
	FDAnswers        = 4
	FDCallbackAnswer = 5
	FDCallbacks      = 6
)

// ProducerOptions configure a producer or a transaction producer (the client's producer.With*).
type ProducerOptions struct {
	NameServers []string
	Group       string
	Instance    string // the client shares one connection set per instance name in a process
	// Retries is how often a failed synchronous send is retried. Zero means none (the client's
	// own default is 2).
	Retries        int
	SendMsgTimeout time.Duration // zero: the client's default (3 s)
	QueueSelector  QueueSelector
	Credentials    primitive.Credentials
	// TLS dials every address, name servers included, with TLS. The client keeps one TLS switch
	// per process: the last client created sets it for every client of the driver.
	TLS bool
}

// QueueSelector names a producer.QueueSelector.
type QueueSelector string

const (
	RoundRobinQueueSelector QueueSelector = ""       // the client's default
	ManualQueueSelector     QueueSelector = "manual" // the message's Queue
	HashQueueSelector       QueueSelector = "hash"   // by the message's sharding key
)

// ConsumerOptions configure a push or a pull consumer (the client's consumer.With*).
type ConsumerOptions struct {
	NameServers  []string
	Group        string
	Instance     string
	Broadcasting bool // else clustering, the client's default
	FromWhere    ConsumeFromWhere
	// MaxReconsumeTimes: zero is the client's default (16 for concurrent consumption).
	MaxReconsumeTimes int32
	Orderly           bool
	PullBatchSize     int32 // zero: the client's default (32)
	Credentials       primitive.Credentials
	// OnAllocate, on the test's side only, sees every queue allocation of a push consumer (the
	// client's default strategy, consumer.AllocateByAveragely, runs in the driver).
	OnAllocate func(AllocationArgs) `json:"-"`
}

// ConsumeFromWhere names a consumer.ConsumeFromWhere.
type ConsumeFromWhere string

const (
	ConsumeFromLastOffset  ConsumeFromWhere = "" // the client's default
	ConsumeFromFirstOffset ConsumeFromWhere = "first"
)

// MessageSelector is consumer.MessageSelector.
type MessageSelector struct {
	Type       ExpressionType
	Expression string
}

// ExpressionType is consumer.ExpressionType.
type ExpressionType string

const (
	TAG   ExpressionType = "TAG"
	SQL92 ExpressionType = "SQL92"
)

// ConsumeResult is consumer.ConsumeResult.
type ConsumeResult int

const (
	ConsumeSuccess ConsumeResult = iota
	ConsumeRetryLater
	Commit
	Rollback
	SuspendCurrentQueueAMoment
)

// AdminOptions configure an admin client (the client's admin.With*).
type AdminOptions struct {
	NameServers []string
	Credentials primitive.Credentials
}

// Message is a primitive.Message as it crosses the pipes.
type Message struct {
	Topic         string
	Body          []byte
	Flag          int32
	TransactionID string
	Queue         *primitive.MessageQueue
	Properties    map[string]string
}

// FromMessage copies m; a nil m gives nil.
func FromMessage(m *primitive.Message) *Message {
	if m == nil {
		return nil
	}
	return &Message{Topic: m.Topic, Body: m.Body, Flag: m.Flag, TransactionID: m.TransactionId, Queue: m.Queue,
		Properties: m.GetProperties()}
}

// FromMessages copies every message of ms.
func FromMessages(ms []*primitive.Message) []*Message {
	out := make([]*Message, len(ms))
	for i, m := range ms {
		out[i] = FromMessage(m)
	}
	return out
}

// Primitive is the message as the client's type; a nil m gives nil.
func (m *Message) Primitive() *primitive.Message {
	if m == nil {
		return nil
	}
	out := &primitive.Message{Topic: m.Topic, Body: m.Body, Flag: m.Flag, TransactionId: m.TransactionID, Queue: m.Queue}
	out.WithProperties(m.Properties)
	return out
}

// PrimitiveMessages converts every message of ms.
func PrimitiveMessages(ms []*Message) []*primitive.Message {
	out := make([]*primitive.Message, len(ms))
	for i, m := range ms {
		out[i] = m.Primitive()
	}
	return out
}

// MessageExt is a primitive.MessageExt (a message as a consumer sees it) as it crosses the pipes.
type MessageExt struct {
	Message
	MsgID                     string
	OffsetMsgID               string
	StoreSize                 int32
	QueueOffset               int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  string
	StoreTimestamp            int64
	StoreHost                 string
	CommitLogOffset           int64
	BodyCRC                   int32
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// FromMessageExt copies m; a nil m gives nil.
func FromMessageExt(m *primitive.MessageExt) *MessageExt {
	if m == nil {
		return nil
	}
	return &MessageExt{Message: *FromMessage(&m.Message), MsgID: m.MsgId, OffsetMsgID: m.OffsetMsgId,
		StoreSize: m.StoreSize, QueueOffset: m.QueueOffset, SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp,
		BornHost: m.BornHost, StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost,
		CommitLogOffset: m.CommitLogOffset, BodyCRC: m.BodyCRC, ReconsumeTimes: m.ReconsumeTimes,
		PreparedTransactionOffset: m.PreparedTransactionOffset}
}

// FromMessageExts copies every message of ms.
func FromMessageExts(ms []*primitive.MessageExt) []*MessageExt {
	out := make([]*MessageExt, len(ms))
	for i, m := range ms {
		out[i] = FromMessageExt(m)
	}
	return out
}

// Primitive is the message as the client's type; a nil m gives nil.
func (m *MessageExt) Primitive() *primitive.MessageExt {
	if m == nil {
		return nil
	}
	out := &primitive.MessageExt{MsgId: m.MsgID, OffsetMsgId: m.OffsetMsgID, StoreSize: m.StoreSize,
		QueueOffset: m.QueueOffset, SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost, CommitLogOffset: m.CommitLogOffset,
		BodyCRC: m.BodyCRC, ReconsumeTimes: m.ReconsumeTimes, PreparedTransactionOffset: m.PreparedTransactionOffset}
	out.Topic, out.Body, out.Flag, out.TransactionId, out.Queue = m.Topic, m.Body, m.Flag, m.TransactionID, m.Queue
	out.WithProperties(m.Properties)
	return out
}

// PrimitiveMessageExts converts every message of ms.
func PrimitiveMessageExts(ms []*MessageExt) []*primitive.MessageExt {
	out := make([]*primitive.MessageExt, len(ms))
	for i, m := range ms {
		out[i] = m.Primitive()
	}
	return out
}

// PullResult is a primitive.PullResult with its messages.
type PullResult struct {
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	Status               primitive.PullStatus
	SuggestWhichBrokerID int64
	Msgs                 []*MessageExt
}

// FromPullResult copies r; a nil r gives nil.
func FromPullResult(r *primitive.PullResult) *PullResult {
	if r == nil {
		return nil
	}
	return &PullResult{NextBeginOffset: r.NextBeginOffset, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset,
		Status: r.Status, SuggestWhichBrokerID: r.SuggestWhichBrokerId, Msgs: FromMessageExts(r.GetMessageExts())}
}

// Primitive is the result as the client's type; a nil r gives nil.
func (r *PullResult) Primitive() *primitive.PullResult {
	if r == nil {
		return nil
	}
	out := &primitive.PullResult{NextBeginOffset: r.NextBeginOffset, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset,
		Status: r.Status, SuggestWhichBrokerId: r.SuggestWhichBrokerID}
	out.SetMessageExts(PrimitiveMessageExts(r.Msgs))
	return out
}

// TopicList is admin.TopicList.
type TopicList struct {
	TopicList  []string
	BrokerAddr string
}

// SubscriptionGroupWrapper is admin.SubscriptionGroupWrapper with each group's config as the
// client decoded it, in JSON.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]json.RawMessage
}

// remoteError is an error of the client as it crosses the pipes: its text, and the name of the
// client's sentinel error (package errors) it wraps, if any.
type remoteError struct {
	Message  string
	Sentinel string `json:",omitempty"`
}

// sentinels are the client's exported errors, by name.
var sentinels = map[string]error{
	"ErrRequestTimeout": clienterrors.ErrRequestTimeout, "ErrMQEmpty": clienterrors.ErrMQEmpty,
	"ErrOffset": clienterrors.ErrOffset, "ErrNumbers": clienterrors.ErrNumbers,
	"ErrEmptyTopic": clienterrors.ErrEmptyTopic, "ErrEmptyNameSrv": clienterrors.ErrEmptyNameSrv,
	"ErrEmptyGroupID": clienterrors.ErrEmptyGroupID, "ErrEmptyExpression": clienterrors.ErrEmptyExpression,
	"ErrCreated": clienterrors.ErrCreated, "ErrBrokerNotFound": clienterrors.ErrBrokerNotFound,
	"ErrStartTopic": clienterrors.ErrStartTopic, "ErrSubscriptionType": clienterrors.ErrSubscriptionType,
	"ErrBlankSubType": clienterrors.ErrBlankSubType, "ErrResponse": clienterrors.ErrResponse,
	"ErrService": clienterrors.ErrService, "ErrTopicNotExist": clienterrors.ErrTopicNotExist,
	"ErrRouteNotFound": clienterrors.ErrRouteNotFound, "ErrNotExisted": clienterrors.ErrNotExisted,
	"ErrNoNameserver": clienterrors.ErrNoNameserver, "ErrTopicEmpty": clienterrors.ErrTopicEmpty,
	"ErrMessageEmpty": clienterrors.ErrMessageEmpty, "ErrNotRunning": clienterrors.ErrNotRunning,
	"ErrPullConsumer": clienterrors.ErrPullConsumer, "ErrProducerCreated": clienterrors.ErrProducerCreated,
	"ErrMultipleTopics": clienterrors.ErrMultipleTopics, "ErrTestMin": clienterrors.ErrTestMin,
	"ErrOperationInterval": clienterrors.ErrOperationInterval, "ErrMessageBody": clienterrors.ErrMessageBody,
	"ErrCompressLevel": clienterrors.ErrCompressLevel, "ErrUnknownIP": clienterrors.ErrUnknownIP,
	"ErrMultiIP": clienterrors.ErrMultiIP, "ErrIllegalIP": clienterrors.ErrIllegalIP,
}

// EncodeError turns an error of the client into the text net/rpc carries (rpc.ServerError).
func EncodeError(err error) error {
	if err == nil {
		return nil
	}
	re := remoteError{Message: err.Error()}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			re.Sentinel = name
			break
		}
	}
	b, jerr := json.Marshal(re)
	if jerr != nil {
		return err
	}
	return errors.New(string(b))
}

// ClientError is an error the client returned in the driver: its text, and errors.Is matches
// the client's sentinel error it wrapped there.
type ClientError struct {
	Message  string
	sentinel error
}

func (e *ClientError) Error() string { return e.Message }

// Unwrap is the client's sentinel error the original wrapped, or nil.
func (e *ClientError) Unwrap() error { return e.sentinel }

// DecodeError reverses EncodeError on the text of an rpc.ServerError; text that EncodeError did
// not make comes back as ok false.
func DecodeError(text string) (err *ClientError, ok bool) {
	var re remoteError
	if json.Unmarshal([]byte(text), &re) != nil || re.Message == "" {
		return nil, false
	}
	return &ClientError{Message: re.Message, sentinel: sentinels[re.Sentinel]}, true
}

// Conn joins the read end of one pipe and the write end of another into the connection
// net/rpc's codecs want; Close closes both.
func Conn(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return pipeConn{r, w} }

type pipeConn struct {
	io.ReadCloser
	w io.WriteCloser
}

func (c pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c pipeConn) Close() error {
	return errors.Join(c.ReadCloser.Close(), c.w.Close())
}
