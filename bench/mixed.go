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
	p, err := NewProducer(pcfg, logger, hooks)
	if err != nil {
		return nil, nil, err
	}
	c, err := NewConsumer(ccfg, logger, hooks)
	if err != nil {
		return nil, nil, err
	}
	prepared, err := prepareMixed(ctx, p, c)
	if err != nil {
		return nil, nil, err
	}
	// One clock for both sides: end-to-end latency is then monotonic time.
	clk := newClock()
	type consumeOut struct {
		res *ConsumeResult
		err error
	}
	// A producer that fails stops the consumer too, instead of leaving it to its timeout.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan consumeOut, 1)
	go func() {
		res, err := prepared.consume.runWith(cctx, &clk)
		done <- consumeOut{res, err}
	}()
	pres, perr := p.runWith(ctx, prepared.producerTargets, &clk)
	if perr != nil {
		cancel()
	}
	cout := <-done
	return pres, cout.res, errors.Join(perr, cout.err)
}
