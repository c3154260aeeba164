package broker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every broker, name server,
// client and pool a test starts must be shut down by its cleanup. The ignored functions
// are process-wide goroutines started by package init, not by any test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gnet starts its ants worker pool (and the pool's janitor goroutines) in package
		// init; they live for the whole process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		// The Go client keeps a process-wide go-cache whose janitor its package init starts.
		goleak.IgnoreAnyFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
		// The Go client's rmqClient.Start goroutines begin with a plain time.Sleep (10 ms to
		// 10 s) and only then look at the done channel that Shutdown closes, so they outlive
		// Shutdown by up to 10 s (internal/client.go). They exit by themselves.
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.1"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.2"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.3"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.4"),
		// (data plane) Its consumers' statistics sleep until the next minute/hour/month
		// boundary, and a push consumer's expired-message cleaner sleeps ConsumeTimeout
		// (15 min), before they look at their close channels (consumer/statistics.go,
		// consumer/push_consumer.go): the same list as e2e_client_test.go's
		// goClientBackgroundGoroutines.
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func4"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func5"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func6"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).Start.func1.2"),
		// (messaging) A transaction producer's check-back loop ranges over a channel that
		// nothing closes, not even Shutdown (producer/producer.go checkTransactionState).
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/producer.(*transactionProducer).checkTransactionState"),
	)
}
