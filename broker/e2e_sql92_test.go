package broker

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/testutil"
)

// TestGoClientSQL92: the Go client's SQL92 subscription
// (consumer.MessageSelector{Type: consumer.SQL92}) end to end, in every store mode: the push
// consumer gets exactly the messages whose properties match, each once, and the group's
// committed offsets still reach the end of every queue, past the messages filtered out.
func TestGoClientSQL92(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			// The modes run side by side: each has its own broker, store and client driver, and
			// most of the time goes to waiting for delay levels and rebalances, not to CPU.
			t.Parallel()
			tb := startTestBroker(t, func(c *Config) {
				mode.apply(c)
				c.EnablePropertyFilter = true
			})
			testE2ESQL92(t, newE2EEnv(t, tb, "sql-"+mode.name))
		})
	}
}

func testE2ESQL92(t *testing.T, e *e2eEnv) {
	const (
		topic = "E2ESQL92"
		group = "G-sql92"
		// Numbers compare as numbers, missing properties never match, TAGS is a property.
		expr = "(TAGS = 'A' AND price BETWEEN 10 AND 50) OR (region IN ('eu', 'ap') AND vip = 'true')"
	)
	p := e.producer(t, "PG-sql92")
	want := map[string]bool{}
	send := func(body, tag string, props map[string]string, match bool) {
		m := primitive.NewMessage(topic, []byte(body))
		for k, v := range props {
			m.WithProperty(k, v)
		}
		sendSync(t, p, m.WithTag(tag))
		if match {
			want[body] = true
		}
	}
	for i := range 40 {
		price := i * 3 // 0..117
		tag := []string{"A", "B"}[i%2]
		region := []string{"eu", "us", "ap", "sa"}[i%4]
		props := map[string]string{"price": strconv.Itoa(price), "region": region}
		vip := i%5 == 0
		if vip {
			props["vip"] = "true"
		}
		match := tag == "A" && price >= 10 && price <= 50 || (region == "eu" || region == "ap") && vip
		send("m-"+strconv.Itoa(i), tag, props, match)
	}
	send("no-props", "A", nil, false) // price is missing: the comparison is NULL
	send("not-a-number", "A", map[string]string{"price": "cheap"}, false)
	e.waitRoute(t, topic)
	e.prepareGroup(t, group)

	rec := newReceived()
	c, err := e.client.NewPushConsumer(e.consumerOptions(group, "c"))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, goclient.MessageSelector{Type: goclient.SQL92, Expression: expr},
		func(_ context.Context, msgs ...*primitive.MessageExt) (goclient.ConsumeResult, error) {
			rec.add(msgs...)
			return goclient.ConsumeSuccess, nil
		}))
	require.NoError(t, c.Start())
	// One matching marker per queue (the producer goes round the 4 queues), sent last: once the
	// consumer has them, it has been past every filtered message before them.
	for q := range 4 {
		send("marker-"+strconv.Itoa(q), "A", map[string]string{"price": "10"}, true)
	}
	testutil.Eventually(t, "the matching messages consumed", func() bool { return rec.distinct() >= len(want) })
	counts, msgs, _ := rec.snapshot()
	require.Len(t, counts, len(want))
	for body, n := range counts {
		require.True(t, want[body], "%s does not match %s", body, expr)
		require.Equal(t, 1, n, body)
	}
	for _, m := range msgs {
		require.NotEmpty(t, m.GetProperty("price"), "user properties delivered: %s", m.Body)
	}
	// The committed offsets pass the filtered messages: every queue is consumed to its end.
	total := queueTotal(e.tb.b, topic, 4)
	require.Equal(t, int64(40+2+4), total)
	testutil.Eventually(t, "offsets committed to the end of every queue", func() bool {
		return committed(e.tb.b, group, topic, 4) == total
	})
}
