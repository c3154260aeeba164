package store_test

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

func ExampleStore() {
	dir, err := os.MkdirTemp("", "ringmq-store-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := store.DefaultConfig(dir)
	cfg.MappedFileSizeCommitLog = 8 << 20 // small files for the example; 1 GiB by default
	s, err := store.Open(cfg, store.Deps{})
	if err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	res, err := s.PutMessage(&codec.Message{Topic: "TopicTest", QueueID: 0, Body: []byte("hello"),
		BornHost: netip.MustParseAddrPort("10.0.0.1:5000")})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.QueueOffset, res.WroteOffset)
	s.WaitDurable(res.EndOffset(), func(err error) { fmt.Println("durable:", err) }) // ASYNC_FLUSH: at once

	// Pulls see a message once the dispatcher has written its ConsumeQueue entry.
	for s.GetMaxOffsetInQueue("TopicTest", 0) == 0 {
		runtime.Gosched()
	}
	r, err := s.GetMessage("group", "TopicTest", 0, 0, 32, 0, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.MessageCount, r.NextBeginOffset)
	r.Release()
	if err := s.Shutdown(); err != nil {
		panic(err)
	}
	// Output:
	// PUT_OK 0 0
	// durable: <nil>
	// FOUND 1 1
}
