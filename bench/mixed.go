package bench

import (
	"context"
	"errors"
	"log/slog"
)

// RunMixed runs a producer and a consumer on the same topic at the same time. The
// producer's targets are resolved first (creating the topic if asked), then the consumer's
// start offsets (with FromLast, the consumer sees exactly what this producer sends), then
// both loads start together. A topic the name server does not know yet (to be created by
// the first send) is read on the producer's brokers and queues.
func RunMixed(ctx context.Context, pcfg ProducerConfig, ccfg ConsumerConfig, logger *slog.Logger, hooks Hooks) (*ProduceResult, *ConsumeResult, error) {
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
	type consumeOut struct {
		res *ConsumeResult
		err error
	}
	// A producer that fails stops the consumer too, instead of leaving it to its timeout.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan consumeOut, 1)
	go func() {
		res, err := prepared.run(cctx)
		done <- consumeOut{res, err}
	}()
	pres, perr := p.run(ctx, ptargets)
	if perr != nil {
		cancel()
	}
	cout := <-done
	return pres, cout.res, errors.Join(perr, cout.err)
}
