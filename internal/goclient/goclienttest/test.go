package goclienttest

import (
	"fmt"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/ringmq/ringmq/internal/goclient"
)

// Test is the Test service the driver calls back: it runs the test's functions (a consumer's,
// a transaction listener's, a SendAsync's) in the test's process. Exported for net/rpc only.
type Test struct {
	d *Driver
}

// Consume hands a push consumer's messages to the function subscribed to their topic.
func (s *Test) Consume(args goclient.ConsumeArgs, out *goclient.ConsumeAnswer) error {
	s.d.mu.Lock()
	c, ok := s.d.push[args.Consumer]
	s.d.mu.Unlock()
	if !ok {
		return fmt.Errorf("goclienttest: no push consumer %d", args.Consumer)
	}
	fn, err := c.fn(args.Topic)
	if err != nil {
		return err
	}
	result, err := fn(s.d.ctx, goclient.PrimitiveMessageExts(args.Msgs)...)
	out.Result = result
	if err != nil {
		out.Err = err.Error()
	}
	return nil
}

// Allocated reports a push consumer's queue allocation to its OnAllocate.
func (s *Test) Allocated(args goclient.AllocationArgs, _ *goclient.Empty) error {
	s.d.mu.Lock()
	c, ok := s.d.push[args.Consumer]
	s.d.mu.Unlock()
	if ok && c.onAllocate != nil {
		c.onAllocate(args)
	}
	return nil
}

func (s *Test) listener(id uint64) (primitive.TransactionListener, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	p, ok := s.d.tx[id]
	if !ok {
		return nil, fmt.Errorf("goclienttest: no transaction producer %d", id)
	}
	return p.listener, nil
}

// ExecuteLocalTransaction asks a transaction producer's listener.
func (s *Test) ExecuteLocalTransaction(args goclient.LocalTransactionArgs, out *primitive.LocalTransactionState) error {
	l, err := s.listener(args.Producer)
	if err != nil {
		return err
	}
	*out = l.ExecuteLocalTransaction(args.Msg.Primitive())
	return nil
}

// CheckLocalTransaction asks a transaction producer's listener about a half the broker checks.
func (s *Test) CheckLocalTransaction(args goclient.CheckTransactionArgs, out *primitive.LocalTransactionState) error {
	l, err := s.listener(args.Producer)
	if err != nil {
		return err
	}
	*out = l.CheckLocalTransaction(args.Msg.Primitive())
	return nil
}

// SendAsyncDone runs a SendAsync's callback with its result.
func (s *Test) SendAsyncDone(args goclient.SendAsyncDoneArgs, _ *goclient.Empty) error {
	s.d.mu.Lock()
	fn, ok := s.d.asyncs[args.Callback]
	delete(s.d.asyncs, args.Callback)
	s.d.mu.Unlock()
	if !ok {
		return fmt.Errorf("goclienttest: no SendAsync callback %d", args.Callback)
	}
	var err error
	if args.Err != "" {
		if ce, ok := goclient.DecodeError(args.Err); ok {
			err = ce
		} else {
			err = fmt.Errorf("%s", args.Err)
		}
	}
	fn(s.d.ctx, args.Result, err)
	return nil
}
