package goclienttest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ringmq/ringmq/internal/goclient"
)

// The proxies: each names one client in the driver. Their methods have the client's names and
// shapes and are safe for concurrent use, as the client's are.

// Producer is rocketmq.Producer in the driver.
type Producer struct {
	d  *Driver
	id uint64
}

// NewProducer creates a producer (not started), as rocketmq.NewProducer.
func (d *Driver) NewProducer(opts goclient.ProducerOptions) (*Producer, error) {
	p := &Producer{d: d, id: d.id()}
	if err := d.call(context.Background(), "NewProducer", goclient.NewProducerArgs{ID: p.id, Options: opts}, &goclient.Empty{}); err != nil {
		return nil, err
	}
	return p, nil
}

// Start starts the producer.
func (p *Producer) Start() error { return p.d.start(p.id) }

// Shutdown shuts the producer down.
func (p *Producer) Shutdown() error { return p.d.shutdown(p.id) }

func (d *Driver) start(id uint64) error {
	return d.call(context.Background(), "Start", goclient.Ref{ID: id}, &goclient.Empty{})
}

func (d *Driver) shutdown(id uint64) error {
	return d.call(context.Background(), "Shutdown", goclient.Ref{ID: id}, &goclient.Empty{})
}

// send calls one of the driver's send methods and copies the properties the client set on its
// copies of msgs back onto msgs, as the client would have set them on the caller's.
func (d *Driver) send(ctx context.Context, method string, args goclient.SendArgs, msgs []*primitive.Message) (goclient.SendAnswer, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	args.Call = goclient.CallFrom(ctx)
	var answer goclient.SendAnswer
	err := d.call(ctx, method, args, &answer)
	if err == nil && len(answer.Properties) == len(msgs) {
		for i, m := range msgs {
			m.WithProperties(answer.Properties[i])
		}
	}
	return answer, err
}

// SendSync is Producer.SendSync.
func (p *Producer) SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	a, err := p.d.send(ctx, "SendSync", goclient.SendArgs{Producer: p.id, Msgs: goclient.FromMessages(msgs)}, msgs)
	if err != nil {
		return nil, err
	}
	return a.Result, nil
}

// SendAsync is Producer.SendAsync: fn runs in the test's process when the driver reports the
// result.
func (p *Producer) SendAsync(ctx context.Context, fn func(context.Context, *primitive.SendResult, error),
	msgs ...*primitive.Message) error {
	cb := p.d.id()
	p.d.mu.Lock()
	p.d.asyncs[cb] = fn
	p.d.mu.Unlock()
	_, err := p.d.send(ctx, "SendAsync", goclient.SendArgs{Producer: p.id, Msgs: goclient.FromMessages(msgs), Callback: cb}, msgs)
	if err != nil {
		p.d.mu.Lock()
		delete(p.d.asyncs, cb)
		p.d.mu.Unlock()
	}
	return err
}

// SendOneWay is Producer.SendOneWay.
func (p *Producer) SendOneWay(ctx context.Context, msgs ...*primitive.Message) error {
	_, err := p.d.send(ctx, "SendOneWay", goclient.SendArgs{Producer: p.id, Msgs: goclient.FromMessages(msgs)}, msgs)
	return err
}

// Request is Producer.Request: the reply.
func (p *Producer) Request(ctx context.Context, ttl time.Duration, msg *primitive.Message) (*primitive.Message, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var a goclient.SendAnswer
	err := p.d.call(ctx, "Request", goclient.RequestArgs{Call: goclient.CallFrom(ctx), Producer: p.id, TTL: ttl,
		Msg: goclient.FromMessage(msg)}, &a)
	if err != nil {
		return nil, err
	}
	if len(a.Properties) == 1 {
		msg.WithProperties(a.Properties[0])
	}
	return a.Reply.Primitive(), nil
}

// TransactionProducer is rocketmq.TransactionProducer in the driver; its listener runs in the
// test's process.
type TransactionProducer struct {
	d        *Driver
	id       uint64
	listener primitive.TransactionListener
}

// NewTransactionProducer creates a transaction producer (not started), as
// rocketmq.NewTransactionProducer.
func (d *Driver) NewTransactionProducer(l primitive.TransactionListener, opts goclient.ProducerOptions) (*TransactionProducer, error) {
	p := &TransactionProducer{d: d, id: d.id(), listener: l}
	d.mu.Lock()
	d.tx[p.id] = p
	d.mu.Unlock()
	if err := d.call(context.Background(), "NewProducer",
		goclient.NewProducerArgs{ID: p.id, Options: opts, Transactional: true}, &goclient.Empty{}); err != nil {
		return nil, err
	}
	return p, nil
}

// Start starts the producer.
func (p *TransactionProducer) Start() error { return p.d.start(p.id) }

// Shutdown shuts the producer down.
func (p *TransactionProducer) Shutdown() error { return p.d.shutdown(p.id) }

// SendMessageInTransaction is TransactionProducer.SendMessageInTransaction.
func (p *TransactionProducer) SendMessageInTransaction(ctx context.Context, msg *primitive.Message) (*primitive.TransactionSendResult, error) {
	a, err := p.d.send(ctx, "SendMessageInTransaction",
		goclient.SendArgs{Producer: p.id, Msgs: goclient.FromMessages([]*primitive.Message{msg})}, []*primitive.Message{msg})
	if err != nil {
		return nil, err
	}
	return &primitive.TransactionSendResult{SendResult: a.Result, State: a.State}, nil
}

// ConsumeFunc is a push consumer's function, as the client's but for its result type.
type ConsumeFunc func(context.Context, ...*primitive.MessageExt) (goclient.ConsumeResult, error)

// PushConsumer is rocketmq.PushConsumer in the driver; its functions run in the test's process.
type PushConsumer struct {
	d          *Driver
	id         uint64
	onAllocate func(goclient.AllocationArgs)

	mu  sync.Mutex
	fns map[string]ConsumeFunc // by topic
}

// NewPushConsumer creates a push consumer (not started), as rocketmq.NewPushConsumer.
func (d *Driver) NewPushConsumer(opts goclient.ConsumerOptions) (*PushConsumer, error) {
	c := &PushConsumer{d: d, id: d.id(), onAllocate: opts.OnAllocate, fns: map[string]ConsumeFunc{}}
	d.mu.Lock()
	d.push[c.id] = c
	d.mu.Unlock()
	if err := d.call(context.Background(), "NewConsumer", goclient.NewConsumerArgs{ID: c.id, Options: opts}, &goclient.Empty{}); err != nil {
		return nil, err
	}
	return c, nil
}

// Subscribe subscribes to topic; fn gets its messages.
func (c *PushConsumer) Subscribe(topic string, selector goclient.MessageSelector, fn ConsumeFunc) error {
	c.mu.Lock()
	c.fns[topic] = fn
	c.mu.Unlock()
	return c.d.call(context.Background(), "Subscribe",
		goclient.SubscribeArgs{Consumer: c.id, Topic: topic, Selector: selector}, &goclient.Empty{})
}

// fn is the function subscribed to topic.
func (c *PushConsumer) fn(topic string) (ConsumeFunc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn, ok := c.fns[topic]
	if !ok {
		return nil, fmt.Errorf("goclienttest: consumer %d has no function for topic %s", c.id, topic)
	}
	return fn, nil
}

// Start starts the consumer.
func (c *PushConsumer) Start() error { return c.d.start(c.id) }

// Shutdown shuts the consumer down (the client stores its offsets first).
func (c *PushConsumer) Shutdown() error { return c.d.shutdown(c.id) }

// GetOffsetDiffMap is PushConsumer.GetOffsetDiffMap.
func (c *PushConsumer) GetOffsetDiffMap() (map[string]int64, error) {
	var out goclient.OffsetDiffs
	err := c.d.call(context.Background(), "GetOffsetDiffMap", goclient.Ref{ID: c.id}, &out)
	return out.Diffs, err
}

// PullConsumer is rocketmq.PullConsumer in the driver.
type PullConsumer struct {
	d  *Driver
	id uint64
}

// NewPullConsumer creates a pull consumer (not started), as rocketmq.NewPullConsumer.
func (d *Driver) NewPullConsumer(opts goclient.ConsumerOptions) (*PullConsumer, error) {
	c := &PullConsumer{d: d, id: d.id()}
	if err := d.call(context.Background(), "NewConsumer",
		goclient.NewConsumerArgs{ID: c.id, Options: opts, Pull: true}, &goclient.Empty{}); err != nil {
		return nil, err
	}
	return c, nil
}

// Subscribe subscribes to topic.
func (c *PullConsumer) Subscribe(topic string, selector goclient.MessageSelector) error {
	return c.d.call(context.Background(), "Subscribe",
		goclient.SubscribeArgs{Consumer: c.id, Topic: topic, Selector: selector}, &goclient.Empty{})
}

// Start starts the consumer.
func (c *PullConsumer) Start() error { return c.d.start(c.id) }

// Shutdown shuts the consumer down.
func (c *PullConsumer) Shutdown() error { return c.d.shutdown(c.id) }

// ConsumeRequest is what Poll got (consumer.ConsumeRequest), to acknowledge with ACK.
type ConsumeRequest struct {
	id   uint64
	msgs []*primitive.MessageExt
}

// GetMsgList is the polled messages.
func (r *ConsumeRequest) GetMsgList() []*primitive.MessageExt { return r.msgs }

// Poll is PullConsumer.Poll: it waits up to timeout for messages.
func (c *PullConsumer) Poll(ctx context.Context, timeout time.Duration) (*ConsumeRequest, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var a goclient.PollAnswer
	if err := c.d.call(ctx, "Poll", goclient.PollArgs{Call: goclient.CallFrom(ctx), Consumer: c.id, Wait: timeout}, &a); err != nil {
		return nil, err
	}
	return &ConsumeRequest{id: a.Request, msgs: goclient.PrimitiveMessageExts(a.Msgs)}, nil
}

// ACK is PullConsumer.ACK of a polled request.
func (c *PullConsumer) ACK(ctx context.Context, r *ConsumeRequest, result goclient.ConsumeResult) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	return c.d.call(ctx, "ACK", goclient.AckArgs{Call: goclient.CallFrom(ctx), Consumer: c.id, Request: r.id, Result: result},
		&goclient.Empty{})
}

// GetTopicRouteInfo is PullConsumer.GetTopicRouteInfo.
func (c *PullConsumer) GetTopicRouteInfo(topic string) ([]*primitive.MessageQueue, error) {
	var out goclient.Queues
	err := c.d.call(context.Background(), "GetTopicRouteInfo", goclient.TopicArgs{Client: c.id, Topic: topic}, &out)
	return out.Queues, err
}

// PullFrom is PullConsumer.PullFrom.
func (c *PullConsumer) PullFrom(ctx context.Context, mq *primitive.MessageQueue, offset int64, numbers int) (*primitive.PullResult, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var out goclient.PullResult
	if err := c.d.call(ctx, "PullFrom", goclient.PullFromArgs{Call: goclient.CallFrom(ctx), Consumer: c.id, Queue: *mq,
		Offset: offset, Numbers: numbers}, &out); err != nil {
		return nil, err
	}
	return out.Primitive(), nil
}

// Admin is admin.Admin in the driver.
type Admin struct {
	d  *Driver
	id uint64
}

// NewAdmin creates an admin client, as admin.NewAdmin.
func (d *Driver) NewAdmin(opts goclient.AdminOptions) (*Admin, error) {
	a := &Admin{d: d, id: d.id()}
	if err := d.call(context.Background(), "NewAdmin", goclient.NewAdminArgs{ID: a.id, Options: opts}, &goclient.Empty{}); err != nil {
		return nil, err
	}
	return a, nil
}

// Close is Admin.Close.
func (a *Admin) Close() error {
	return a.d.call(context.Background(), "CloseAdmin", goclient.Ref{ID: a.id}, &goclient.Empty{})
}

// CreateTopic is Admin.CreateTopic; args.Admin and args.Call are filled in.
func (a *Admin) CreateTopic(ctx context.Context, args goclient.CreateTopicArgs) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	args.Call, args.Admin = goclient.CallFrom(ctx), a.id
	return a.d.call(ctx, "CreateTopic", args, &goclient.Empty{})
}

// DeleteTopic is Admin.DeleteTopic; args.Admin and args.Call are filled in.
func (a *Admin) DeleteTopic(ctx context.Context, args goclient.DeleteTopicArgs) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	args.Call, args.Admin = goclient.CallFrom(ctx), a.id
	return a.d.call(ctx, "DeleteTopic", args, &goclient.Empty{})
}

// FetchPublishMessageQueues is Admin.FetchPublishMessageQueues.
func (a *Admin) FetchPublishMessageQueues(ctx context.Context, topic string) ([]*primitive.MessageQueue, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var out goclient.Queues
	err := a.d.call(ctx, "FetchPublishMessageQueues", goclient.TopicArgs{Call: goclient.CallFrom(ctx), Client: a.id, Topic: topic}, &out)
	return out.Queues, err
}

// FetchAllTopicList is Admin.FetchAllTopicList.
func (a *Admin) FetchAllTopicList(ctx context.Context) (*goclient.TopicList, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var out goclient.TopicList
	if err := a.d.call(ctx, "FetchAllTopicList", goclient.TopicArgs{Call: goclient.CallFrom(ctx), Client: a.id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FetchClusterList is Admin.FetchClusterList.
func (a *Admin) FetchClusterList(topic string) ([]string, error) {
	var out goclient.Names
	err := a.d.call(context.Background(), "FetchClusterList", goclient.TopicArgs{Client: a.id, Topic: topic}, &out)
	return out.Names, err
}

// GetAllSubscriptionGroup is Admin.GetAllSubscriptionGroup.
func (a *Admin) GetAllSubscriptionGroup(ctx context.Context, brokerAddr string, timeout time.Duration) (*goclient.SubscriptionGroupWrapper, error) {
	ctx, cancel := bound(ctx)
	defer cancel()
	var out goclient.SubscriptionGroupWrapper
	if err := a.d.call(ctx, "GetAllSubscriptionGroup", goclient.SubscriptionGroupsArgs{Call: goclient.CallFrom(ctx),
		Admin: a.id, BrokerAddr: brokerAddr, CallTimeout: timeout}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
