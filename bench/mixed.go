package bench

import (
	"context"
	"errors"
	"log/slog"
)

// RunMixed runs a producer and a consumer on the same topic at the same time, on one
// clock: targets and start offsets are resolved as prepareMixed does, then both loads
// start together.
func RunMixed(ctx context.Context, pcfg ProducerConfig, ccfg ConsumerConfig, logger *slog.Logger, hooks Hooks) (*ProduceResult, *ConsumeResult, error) {
	p, prepared, err := prepareMixed(ctx, pcfg, ccfg, logger, hooks)
	if err != nil {
		return nil, nil, err
	}
	// A producer that fails stops the consumer too, instead of leaving it to its timeout.
	return runTogether(ctx, p, prepared, func(_ *ProduceResult, perr error) bool { return perr != nil })
}

// runTogether runs the prepared consumer and the producer at once on one clock (so that
// end-to-end latency is monotonic time). When the producer has returned, settle says
// whether to stop the consumer now (it may first wait for the consumer to catch up);
// otherwise the consumer ends by its own duration or count.
func runTogether(ctx context.Context, p *Producer, m *mixedRun, settle func(*ProduceResult, error) bool) (*ProduceResult, *ConsumeResult, error) {
	clk := newClock()
	type consumeOut struct {
		res *ConsumeResult
		err error
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan consumeOut, 1)
	go func() {
		res, err := m.consume.runWith(cctx, &clk)
		done <- consumeOut{res, err}
	}()
	pres, perr := p.runWith(ctx, m.producerTargets, &clk)
	if settle(pres, perr) {
		cancel()
	}
	cout := <-done
	return pres, cout.res, errors.Join(perr, cout.err)
}

// mixedRun is a producer's targets and a consumer prepared on them.
type mixedRun struct {
	producerTargets []BrokerQueues
	consume         *preparedConsume
}

// prepareMixed makes the producer and the consumer, then resolves the producer's targets
// first (creating the topic if asked), then the consumer's start offsets (with FromLast,
// the consumer sees exactly what this producer sends). A topic the name server does not
// know yet (to be created by the first send) is read on the producer's brokers and queues.
func prepareMixed(ctx context.Context, pcfg ProducerConfig, ccfg ConsumerConfig, logger *slog.Logger, hooks Hooks) (*Producer, *mixedRun, error) {
	p, err := NewProducer(pcfg, logger, hooks)
	if err != nil {
		return nil, nil, err
	}
	c, err := NewConsumer(ccfg, logger, hooks)
	if err != nil {
		return nil, nil, err
	}
	ptargets, err := producerTargets(ctx, &p.cfg)
	if err != nil {
		return nil, nil, err
	}
	ctargets, err := consumerTargets(ctx, &c.cfg)
	if errors.Is(err, ErrNoRoute) {
		ctargets, err = ptargets, nil
	}
	if err != nil {
		return nil, nil, err
	}
	prepared, err := c.prepare(ctx, ctargets)
	if err != nil {
		return nil, nil, err
	}
	return p, &mixedRun{producerTargets: ptargets, consume: prepared}, nil
}
