package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/rpc"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ringmq/ringmq/internal/goclient"
)

// Driver is the Driver service: one method per call of the client's API that tests use, each a
// thin translation (goclient's types in, the client's call, goclient's types out). A new call
// is one method here and its proxy in goclienttest; net/rpc finds methods by name, so every
// exported method of Driver must have net/rpc's shape.
//
// Safe for concurrent use: net/rpc runs each request on a goroutine of its own.
type Driver struct {
	test *rpc.Client // the test's Test service, for callbacks

	mu       sync.Mutex
	clients  map[uint64]any                      // by the test's ID: producers, consumers, admins
	requests map[uint64]*consumer.ConsumeRequest // polled and not yet acknowledged
	nextPoll atomic.Uint64                       // request IDs (the driver's own)
}

func newDriver(test *rpc.Client) *Driver {
	return &Driver{test: test, clients: map[uint64]any{}, requests: map[uint64]*consumer.ConsumeRequest{}}
}

// client finds the client id names, of type T.
func client[T any](d *Driver, id uint64) (T, error) {
	d.mu.Lock()
	c, ok := d.clients[id]
	d.mu.Unlock()
	t, isT := c.(T)
	if !ok || !isT {
		return t, fmt.Errorf("goclient driver: no %v with id %d", reflect.TypeFor[T](), id)
	}
	return t, nil
}

// with runs fn with the client id names, of type T, and a context of call's time; it sends the
// client's error back as EncodeError makes it.
func with[T any](d *Driver, id uint64, call goclient.Call, fn func(context.Context, T) error) error {
	c, err := client[T](d, id)
	if err != nil {
		return err
	}
	ctx, cancel := call.Context()
	defer cancel()
	return goclient.EncodeError(fn(ctx, c))
}

func (d *Driver) add(id uint64, c any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.clients[id]; ok {
		return fmt.Errorf("goclient driver: id %d is taken", id)
	}
	d.clients[id] = c
	return nil
}

// callback calls the test's Test service.
func (d *Driver) callback(method string, args, answer any) error {
	return d.test.Call(goclient.TestService+"."+method, args, answer)
}

// Hello says who the driver is.
func (d *Driver) Hello(_ goclient.Empty, out *goclient.Hello) error {
	*out = goclient.Hello{PID: os.Getpid(), RaceEnabled: raceEnabled}
	return nil
}

// Stacks is every goroutine's stack in the driver (runtime.Stack), for tests that look at
// what the client is doing.
func (d *Driver) Stacks(_ goclient.Empty, out *string) error {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			*out = string(buf[:n])
			return nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// --- producers ---

// txListener answers the client's transaction callbacks through the test.
type txListener struct {
	d  *Driver
	id uint64
}

func (l txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	var state primitive.LocalTransactionState
	if err := l.d.callback("ExecuteLocalTransaction",
		goclient.LocalTransactionArgs{Producer: l.id, Msg: goclient.FromMessage(m)}, &state); err != nil {
		fmt.Fprintln(os.Stderr, "goclient driver: ExecuteLocalTransaction:", err)
		return primitive.UnkonwnState
	}
	return state
}

func (l txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	var state primitive.LocalTransactionState
	if err := l.d.callback("CheckLocalTransaction",
		goclient.CheckTransactionArgs{Producer: l.id, Msg: goclient.FromMessageExt(m)}, &state); err != nil {
		fmt.Fprintln(os.Stderr, "goclient driver: CheckLocalTransaction:", err)
		return primitive.UnkonwnState
	}
	return state
}

// NewProducer creates a producer or a transaction producer (not started).
func (d *Driver) NewProducer(args goclient.NewProducerArgs, _ *goclient.Empty) error {
	o := args.Options
	opts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver(o.NameServers)),
		producer.WithGroupName(o.Group),
		producer.WithInstanceName(o.Instance),
		producer.WithRetry(o.Retries),
		producer.WithCredentials(o.Credentials),
		producer.WithTls(o.TLS),
	}
	if o.SendMsgTimeout > 0 {
		opts = append(opts, producer.WithSendMsgTimeout(o.SendMsgTimeout))
	}
	switch o.QueueSelector {
	case goclient.RoundRobinQueueSelector:
	case goclient.ManualQueueSelector:
		opts = append(opts, producer.WithQueueSelector(producer.NewManualQueueSelector()))
	case goclient.HashQueueSelector:
		opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	default:
		return fmt.Errorf("goclient driver: unknown QueueSelector %q", o.QueueSelector)
	}
	if args.Transactional {
		p, err := rocketmq.NewTransactionProducer(txListener{d: d, id: args.ID}, opts...)
		if err != nil {
			return goclient.EncodeError(err)
		}
		return d.add(args.ID, p)
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		return goclient.EncodeError(err)
	}
	return d.add(args.ID, p)
}

// starter is every client with Start and Shutdown.
type starter interface {
	Start() error
	Shutdown() error
}

// Start starts a producer or a consumer.
func (d *Driver) Start(args goclient.Ref, _ *goclient.Empty) error {
	return with(d, args.ID, goclient.Call{}, func(_ context.Context, c starter) error { return c.Start() })
}

// Shutdown shuts a producer or a consumer down.
func (d *Driver) Shutdown(args goclient.Ref, _ *goclient.Empty) error {
	return with(d, args.ID, goclient.Call{}, func(_ context.Context, c starter) error { return c.Shutdown() })
}

// sent is the answer of a send: the messages' properties after it.
func sent(msgs []*primitive.Message) goclient.SendAnswer {
	a := goclient.SendAnswer{Properties: make([]map[string]string, len(msgs))}
	for i, m := range msgs {
		a.Properties[i] = m.GetProperties()
	}
	return a
}

// SendSync is Producer.SendSync.
func (d *Driver) SendSync(args goclient.SendArgs, out *goclient.SendAnswer) error {
	return with(d, args.Producer, args.Call, func(ctx context.Context, p rocketmq.Producer) error {
		msgs := goclient.PrimitiveMessages(args.Msgs)
		res, err := p.SendSync(ctx, msgs...)
		*out = sent(msgs)
		out.Result = res
		return err
	})
}

// SendAsync is Producer.SendAsync; its result comes back through Test.SendAsyncDone.
func (d *Driver) SendAsync(args goclient.SendArgs, out *goclient.SendAnswer) error {
	return with(d, args.Producer, goclient.Call{}, func(_ context.Context, p rocketmq.Producer) error {
		// The send goes on after this call returns: its context ends with its result.
		ctx, cancel := args.Context()
		msgs := goclient.PrimitiveMessages(args.Msgs)
		err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer cancel()
			done := goclient.SendAsyncDoneArgs{Callback: args.Callback, Result: res}
			if err != nil {
				done.Err = goclient.EncodeError(err).Error()
			}
			if cerr := d.callback("SendAsyncDone", done, &goclient.Empty{}); cerr != nil {
				fmt.Fprintln(os.Stderr, "goclient driver: SendAsyncDone:", cerr)
			}
		}, msgs...)
		if err != nil {
			cancel()
		}
		*out = sent(msgs)
		return err
	})
}

// SendOneWay is Producer.SendOneWay.
func (d *Driver) SendOneWay(args goclient.SendArgs, out *goclient.SendAnswer) error {
	return with(d, args.Producer, args.Call, func(ctx context.Context, p rocketmq.Producer) error {
		msgs := goclient.PrimitiveMessages(args.Msgs)
		err := p.SendOneWay(ctx, msgs...)
		*out = sent(msgs)
		return err
	})
}

// Request is Producer.Request of one message: the reply message.
func (d *Driver) Request(args goclient.RequestArgs, out *goclient.SendAnswer) error {
	return with(d, args.Producer, args.Call, func(ctx context.Context, p rocketmq.Producer) error {
		msg := args.Msg.Primitive()
		reply, err := p.Request(ctx, args.TTL, msg)
		*out = sent([]*primitive.Message{msg})
		out.Reply = goclient.FromMessage(reply)
		return err
	})
}

// SendMessageInTransaction is TransactionProducer.SendMessageInTransaction of one message.
func (d *Driver) SendMessageInTransaction(args goclient.SendArgs, out *goclient.SendAnswer) error {
	if len(args.Msgs) != 1 {
		return fmt.Errorf("goclient driver: SendMessageInTransaction takes one message, not %d", len(args.Msgs))
	}
	return with(d, args.Producer, args.Call, func(ctx context.Context, p rocketmq.TransactionProducer) error {
		msgs := goclient.PrimitiveMessages(args.Msgs)
		res, err := p.SendMessageInTransaction(ctx, msgs[0])
		*out = sent(msgs)
		if res != nil {
			out.Result, out.State = res.SendResult, res.State
		}
		return err
	})
}

// --- consumers ---

// NewConsumer creates a push or a pull consumer (not started).
func (d *Driver) NewConsumer(args goclient.NewConsumerArgs, _ *goclient.Empty) error {
	o := args.Options
	opts := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(o.NameServers)),
		consumer.WithGroupName(o.Group),
		consumer.WithInstance(o.Instance),
		consumer.WithCredentials(o.Credentials),
	}
	if o.Broadcasting {
		opts = append(opts, consumer.WithConsumerModel(consumer.BroadCasting))
	} else {
		opts = append(opts, consumer.WithConsumerModel(consumer.Clustering))
	}
	switch o.FromWhere {
	case goclient.ConsumeFromLastOffset:
	case goclient.ConsumeFromFirstOffset:
		opts = append(opts, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	default:
		return fmt.Errorf("goclient driver: unknown FromWhere %q", o.FromWhere)
	}
	if o.MaxReconsumeTimes != 0 {
		opts = append(opts, consumer.WithMaxReconsumeTimes(o.MaxReconsumeTimes))
	}
	if o.PullBatchSize != 0 {
		opts = append(opts, consumer.WithPullBatchSize(o.PullBatchSize))
	}
	if args.Pull {
		c, err := rocketmq.NewPullConsumer(opts...)
		if err != nil {
			return goclient.EncodeError(err)
		}
		return d.add(args.ID, c)
	}
	opts = append(opts, consumer.WithConsumerOrder(o.Orderly), consumer.WithStrategy(d.allocate(args.ID)))
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		return goclient.EncodeError(err)
	}
	return d.add(args.ID, c)
}

// allocate is the client's default strategy, each allocation reported to the test.
func (d *Driver) allocate(id uint64) consumer.AllocateStrategy {
	return func(group, cid string, mqAll []*primitive.MessageQueue, cidAll []string) []*primitive.MessageQueue {
		got := consumer.AllocateByAveragely(group, cid, mqAll, cidAll)
		if err := d.callback("Allocated", goclient.AllocationArgs{Consumer: id, Group: group, ClientID: cid,
			Queues: mqAll, ClientIDs: cidAll, Allocated: got}, &goclient.Empty{}); err != nil {
			fmt.Fprintln(os.Stderr, "goclient driver: Allocated:", err)
		}
		return got
	}
}

func selector(s goclient.MessageSelector) consumer.MessageSelector {
	return consumer.MessageSelector{Type: consumer.ExpressionType(s.Type), Expression: s.Expression}
}

// consumeResult maps the test's answer onto the client's values.
func consumeResult(r goclient.ConsumeResult) (consumer.ConsumeResult, error) {
	switch r {
	case goclient.ConsumeSuccess:
		return consumer.ConsumeSuccess, nil
	case goclient.ConsumeRetryLater:
		return consumer.ConsumeRetryLater, nil
	case goclient.Commit:
		return consumer.Commit, nil
	case goclient.Rollback:
		return consumer.Rollback, nil
	case goclient.SuspendCurrentQueueAMoment:
		return consumer.SuspendCurrentQueueAMoment, nil
	}
	return consumer.ConsumeRetryLater, fmt.Errorf("goclient driver: unknown ConsumeResult %d", r)
}

// Subscribe subscribes a push consumer (its messages go to Test.Consume) or a pull consumer.
func (d *Driver) Subscribe(args goclient.SubscribeArgs, _ *goclient.Empty) error {
	d.mu.Lock()
	c := d.clients[args.Consumer]
	d.mu.Unlock()
	switch c := c.(type) {
	case rocketmq.PullConsumer:
		return goclient.EncodeError(c.Subscribe(args.Topic, selector(args.Selector)))
	case rocketmq.PushConsumer:
		return goclient.EncodeError(c.Subscribe(args.Topic, selector(args.Selector),
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				var answer goclient.ConsumeAnswer
				if err := d.callback("Consume", goclient.ConsumeArgs{Consumer: args.Consumer, Topic: args.Topic,
					Msgs: goclient.FromMessageExts(msgs)}, &answer); err != nil {
					// The test is gone: the messages come back later.
					return consumer.ConsumeRetryLater, err
				}
				r, err := consumeResult(answer.Result)
				if err == nil && answer.Err != "" {
					err = errors.New(answer.Err)
				}
				return r, err
			}))
	}
	return fmt.Errorf("goclient driver: no consumer with id %d", args.Consumer)
}

// GetOffsetDiffMap is PushConsumer.GetOffsetDiffMap.
func (d *Driver) GetOffsetDiffMap(args goclient.Ref, out *goclient.OffsetDiffs) error {
	return with(d, args.ID, goclient.Call{}, func(_ context.Context, c rocketmq.PushConsumer) error {
		out.Diffs = c.GetOffsetDiffMap()
		return nil
	})
}

// Poll is PullConsumer.Poll; the request stays in the driver until ACK.
func (d *Driver) Poll(args goclient.PollArgs, out *goclient.PollAnswer) error {
	return with(d, args.Consumer, args.Call, func(ctx context.Context, c rocketmq.PullConsumer) error {
		cr, err := c.Poll(ctx, args.Wait)
		if err != nil {
			return err
		}
		id := d.nextPoll.Add(1)
		d.mu.Lock()
		d.requests[id] = cr
		d.mu.Unlock()
		*out = goclient.PollAnswer{Request: id, Msgs: goclient.FromMessageExts(cr.GetMsgList())}
		return nil
	})
}

// ACK is PullConsumer.ACK of a polled request.
func (d *Driver) ACK(args goclient.AckArgs, _ *goclient.Empty) error {
	result, err := consumeResult(args.Result)
	if err != nil {
		return err
	}
	d.mu.Lock()
	cr, ok := d.requests[args.Request]
	delete(d.requests, args.Request)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("goclient driver: no polled request %d", args.Request)
	}
	return with(d, args.Consumer, args.Call, func(ctx context.Context, c rocketmq.PullConsumer) error {
		c.ACK(ctx, cr, result)
		return nil
	})
}

// GetTopicRouteInfo is PullConsumer.GetTopicRouteInfo.
func (d *Driver) GetTopicRouteInfo(args goclient.TopicArgs, out *goclient.Queues) error {
	return with(d, args.Client, args.Call, func(_ context.Context, c rocketmq.PullConsumer) (err error) {
		out.Queues, err = c.GetTopicRouteInfo(args.Topic)
		return err
	})
}

// PullFrom is PullConsumer.PullFrom.
func (d *Driver) PullFrom(args goclient.PullFromArgs, out *goclient.PullResult) error {
	return with(d, args.Consumer, args.Call, func(ctx context.Context, c rocketmq.PullConsumer) error {
		mq := args.Queue
		res, err := c.PullFrom(ctx, &mq, args.Offset, args.Numbers)
		if err != nil {
			return err
		}
		*out = *goclient.FromPullResult(res)
		return nil
	})
}

// CreateReplyMessage is consumer.CreateReplyMessage.
func (d *Driver) CreateReplyMessage(args goclient.ReplyArgs, out *goclient.Message) error {
	m, err := consumer.CreateReplyMessage(args.Request.Primitive(), args.Body)
	if err != nil {
		return goclient.EncodeError(err)
	}
	*out = *goclient.FromMessage(m)
	return nil
}

// --- admin ---

// NewAdmin creates an admin client.
func (d *Driver) NewAdmin(args goclient.NewAdminArgs, _ *goclient.Empty) error {
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(args.Options.NameServers)),
		admin.WithCredentials(args.Options.Credentials))
	if err != nil {
		return goclient.EncodeError(err)
	}
	return d.add(args.ID, a)
}

// CloseAdmin is Admin.Close.
func (d *Driver) CloseAdmin(args goclient.Ref, _ *goclient.Empty) error {
	return with(d, args.ID, goclient.Call{}, func(_ context.Context, a admin.Admin) error { return a.Close() })
}

// CreateTopic is Admin.CreateTopic.
func (d *Driver) CreateTopic(args goclient.CreateTopicArgs, _ *goclient.Empty) error {
	opts := []admin.OptionCreate{admin.WithTopicCreate(args.Topic), admin.WithBrokerAddrCreate(args.BrokerAddr),
		admin.WithOrder(args.Order)}
	if args.ReadQueueNums != 0 {
		opts = append(opts, admin.WithReadQueueNums(args.ReadQueueNums))
	}
	if args.WriteQueueNums != 0 {
		opts = append(opts, admin.WithWriteQueueNums(args.WriteQueueNums))
	}
	if args.Perm != 0 {
		opts = append(opts, admin.WithPerm(args.Perm))
	}
	return with(d, args.Admin, args.Call, func(ctx context.Context, a admin.Admin) error {
		return a.CreateTopic(ctx, opts...)
	})
}

// DeleteTopic is Admin.DeleteTopic.
func (d *Driver) DeleteTopic(args goclient.DeleteTopicArgs, _ *goclient.Empty) error {
	opts := []admin.OptionDelete{admin.WithTopicDelete(args.Topic)}
	if args.BrokerAddr != "" {
		opts = append(opts, admin.WithBrokerAddrDelete(args.BrokerAddr))
	}
	return with(d, args.Admin, args.Call, func(ctx context.Context, a admin.Admin) error {
		return a.DeleteTopic(ctx, opts...)
	})
}

// FetchPublishMessageQueues is Admin.FetchPublishMessageQueues.
func (d *Driver) FetchPublishMessageQueues(args goclient.TopicArgs, out *goclient.Queues) error {
	return with(d, args.Client, args.Call, func(ctx context.Context, a admin.Admin) (err error) {
		out.Queues, err = a.FetchPublishMessageQueues(ctx, args.Topic)
		return err
	})
}

// FetchAllTopicList is Admin.FetchAllTopicList.
func (d *Driver) FetchAllTopicList(args goclient.TopicArgs, out *goclient.TopicList) error {
	return with(d, args.Client, args.Call, func(ctx context.Context, a admin.Admin) error {
		list, err := a.FetchAllTopicList(ctx)
		if err != nil {
			return err
		}
		*out = goclient.TopicList{TopicList: list.TopicList, BrokerAddr: list.BrokerAddr}
		return nil
	})
}

// FetchClusterList is Admin.FetchClusterList.
func (d *Driver) FetchClusterList(args goclient.TopicArgs, out *goclient.Names) error {
	return with(d, args.Client, args.Call, func(_ context.Context, a admin.Admin) (err error) {
		out.Names, err = a.FetchClusterList(args.Topic)
		return err
	})
}

// GetAllSubscriptionGroup is Admin.GetAllSubscriptionGroup.
func (d *Driver) GetAllSubscriptionGroup(args goclient.SubscriptionGroupsArgs, out *goclient.SubscriptionGroupWrapper) error {
	return with(d, args.Admin, args.Call, func(ctx context.Context, a admin.Admin) error {
		groups, err := a.GetAllSubscriptionGroup(ctx, args.BrokerAddr, args.CallTimeout)
		if err != nil {
			return err
		}
		out.SubscriptionGroupTable = make(map[string]json.RawMessage, len(groups.SubscriptionGroupTable))
		for name, g := range groups.SubscriptionGroupTable {
			b, err := json.Marshal(g)
			if err != nil {
				return fmt.Errorf("goclient driver: group %s: %w", name, err)
			}
			out.SubscriptionGroupTable[name] = b
		}
		return nil
	})
}
