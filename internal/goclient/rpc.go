package goclient

import (
	"context"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// The arguments and answers of the Driver and Test services' methods (net/rpc: one argument,
// one answer per method). Clients in the driver are named by IDs the test chooses. An answer is
// never a bare slice or map: net/rpc's JSON client takes a null result (a nil one) for a broken
// connection and closes it.

// Empty is the argument or answer of a method that needs none.
type Empty struct{}

// Call is embedded in the arguments of every call the client bounds with a context: the time
// left of the test's context, which the driver gives the client's call. Zero is no deadline.
type Call struct {
	Timeout time.Duration
}

// CallFrom is the Call for ctx.
func CallFrom(ctx context.Context) Call {
	if d, ok := ctx.Deadline(); ok {
		return Call{Timeout: max(time.Until(d), time.Millisecond)}
	}
	return Call{}
}

// Context is the context the driver calls the client with.
func (c Call) Context() (context.Context, context.CancelFunc) {
	if c.Timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), c.Timeout)
}

// Ref names one client of the driver.
type Ref struct {
	ID uint64
}

// Hello is what the driver says about itself.
type Hello struct {
	PID         int
	RaceEnabled bool // built with -race: must be false
}

// NewProducerArgs creates a producer (Transactional: a transaction producer, whose listener
// the driver calls back with Test.ExecuteLocalTransaction and Test.CheckLocalTransaction).
type NewProducerArgs struct {
	ID            uint64
	Options       ProducerOptions
	Transactional bool
}

// NewConsumerArgs creates a push consumer (its messages come back through Test.Consume and its
// queue allocations through Test.Allocated) or, with Pull, a pull consumer.
type NewConsumerArgs struct {
	ID      uint64
	Options ConsumerOptions
	Pull    bool
}

// NewAdminArgs creates an admin client.
type NewAdminArgs struct {
	ID      uint64
	Options AdminOptions
}

// SendArgs sends messages (SendSync, SendAsync, SendOneWay, SendMessageInTransaction). A
// SendAsync's result comes back through Test.SendAsyncDone with Callback.
type SendArgs struct {
	Call
	Producer uint64
	Msgs     []*Message
	Callback uint64
}

// SendAnswer is the answer of every send: the result of the one that has one, and the
// messages' properties after the call (the client sets some on the caller's messages, such as
// UNIQ_KEY, and Request its correlation id), which the test's side copies back.
type SendAnswer struct {
	Result     *primitive.SendResult
	State      primitive.LocalTransactionState // SendMessageInTransaction
	Reply      *Message                        // Request
	Properties []map[string]string
}

// RequestArgs is Producer.Request.
type RequestArgs struct {
	Call
	Producer uint64
	TTL      time.Duration
	Msg      *Message
}

// SubscribeArgs subscribes a consumer to a topic.
type SubscribeArgs struct {
	Consumer uint64
	Topic    string
	Selector MessageSelector
}

// PollArgs is PullConsumer.Poll, which waits up to Wait.
type PollArgs struct {
	Call
	Consumer uint64
	Wait     time.Duration
}

// PollAnswer is what Poll got: the driver keeps the client's ConsumeRequest under Request
// until it is acknowledged.
type PollAnswer struct {
	Request uint64
	Msgs    []*MessageExt
}

// AckArgs is PullConsumer.ACK of a polled request.
type AckArgs struct {
	Call
	Consumer uint64
	Request  uint64
	Result   ConsumeResult
}

// Queues answers the calls that list message queues.
type Queues struct {
	Queues []*primitive.MessageQueue
}

// Names answers Admin.FetchClusterList.
type Names struct {
	Names []string
}

// OffsetDiffs answers PushConsumer.GetOffsetDiffMap: per topic, how far the consumer's offsets
// are behind.
type OffsetDiffs struct {
	Diffs map[string]int64
}

// TopicArgs names a topic for a client.
type TopicArgs struct {
	Call
	Client uint64
	Topic  string
}

// PullFromArgs is PullConsumer.PullFrom.
type PullFromArgs struct {
	Call
	Consumer uint64
	Queue    primitive.MessageQueue
	Offset   int64
	Numbers  int
}

// CreateTopicArgs is Admin.CreateTopic; zero fields keep the client's defaults.
type CreateTopicArgs struct {
	Call
	Admin          uint64
	Topic          string
	BrokerAddr     string
	ReadQueueNums  int
	WriteQueueNums int
	Perm           int
	Order          bool
}

// DeleteTopicArgs is Admin.DeleteTopic; an empty BrokerAddr lets the client find it.
type DeleteTopicArgs struct {
	Call
	Admin      uint64
	Topic      string
	BrokerAddr string
}

// SubscriptionGroupsArgs is Admin.GetAllSubscriptionGroup.
type SubscriptionGroupsArgs struct {
	Call
	Admin       uint64
	BrokerAddr  string
	CallTimeout time.Duration
}

// ReplyArgs is consumer.CreateReplyMessage.
type ReplyArgs struct {
	Request *MessageExt
	Body    []byte
}

// ConsumeArgs (Test.Consume) hands a push consumer's messages to the function subscribed to
// Topic.
type ConsumeArgs struct {
	Consumer uint64
	Topic    string
	Msgs     []*MessageExt
}

// ConsumeAnswer is what the subscribed function returned: its result and its error's text.
type ConsumeAnswer struct {
	Result ConsumeResult
	Err    string
}

// LocalTransactionArgs (Test.ExecuteLocalTransaction) asks a transaction producer's listener.
type LocalTransactionArgs struct {
	Producer uint64
	Msg      *Message
}

// CheckTransactionArgs (Test.CheckLocalTransaction) asks a transaction producer's listener
// about a half message the broker checks back.
type CheckTransactionArgs struct {
	Producer uint64
	Msg      *MessageExt
}

// AllocationArgs (Test.Allocated) reports one queue allocation of a push consumer: the
// client's default strategy (consumer.AllocateByAveragely) gave Allocated out of Queues to
// ClientID among ClientIDs.
type AllocationArgs struct {
	Consumer  uint64
	Group     string
	ClientID  string
	Queues    []*primitive.MessageQueue
	ClientIDs []string
	Allocated []*primitive.MessageQueue
}

// SendAsyncDoneArgs (Test.SendAsyncDone) is a SendAsync's result: Err is EncodeError's text.
type SendAsyncDoneArgs struct {
	Callback uint64
	Result   *primitive.SendResult
	Err      string
}
