package namesrv

import (
	"fmt"
	"testing"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// BenchmarkRouteLookup is the hot request of a name server: build one topic's route (two
// broker names, master + slave) and encode it as the Go client receives it.
func BenchmarkRouteLookup(b *testing.B) {
	m := newTestRoutes(testutil.NewManualClock())
	for _, name := range []string{"broker-a", "broker-b"} {
		mustRegister(&testing.T{}, m, registration("C", name, 0, name+":10911", 1, topicConfig("T", 8, 8, 6), topicConfig("U", 1, 1, 6)))
		mustRegister(&testing.T{}, m, registration("C", name, 1, name+"-s:10911", 1))
	}
	b.ReportAllocs()
	for b.Loop() {
		rd, ok := m.pickupTopicRouteData("T")
		if !ok {
			b.Fatal("no route")
		}
		if _, err := codec.EncodeTopicRouteData(rd, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegisterBroker measures what one periodic registration costs the event loop
// that handles it: decode the body and apply it, for a broker with many topics, with a
// changed dataVersion each time (the worst case: every topic is rewritten).
func BenchmarkRegisterBroker(b *testing.B) {
	for _, topics := range []int{1000, 10000} {
		for _, compressed := range []bool{false, true} {
			b.Run(fmt.Sprintf("topics=%d/compressed=%v", topics, compressed), func(b *testing.B) {
				table := make(map[string]codec.TopicConfig, topics)
				for i := range topics {
					name := fmt.Sprintf("Topic-%05d", i)
					table[name] = topicConfig(name, 8, 8, 6)
				}
				body := codec.RegisterBrokerBody{FilterServerList: []string{},
					TopicConfigSerializeWrapper: codec.TopicConfigSerializeWrapper{TopicConfigTable: table}}
				var raw []byte
				var err error
				if compressed {
					raw, err = body.EncodeCompressed(versionJava5)
				} else {
					raw, err = body.Encode()
				}
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(raw)))
				m := newTestRoutes(testutil.NewManualClock())
				counter := int64(0)
				b.ReportAllocs()
				for b.Loop() {
					decoded, err := codec.DecodeRegisterBrokerBody(raw, compressed, versionJava5)
					if err != nil {
						b.Fatal(err)
					}
					counter++
					decoded.TopicConfigSerializeWrapper.DataVersion.Counter = counter
					reg := &brokerRegistration{clusterName: "C", brokerAddr: "10.0.0.1:10911", brokerName: "broker-a",
						topics: decoded.TopicConfigSerializeWrapper, filterServerList: decoded.FilterServerList}
					if _, err := m.registerBroker(reg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
