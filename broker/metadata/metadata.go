// Package metadata is the broker's metadata plane: the tables RocketMQ keeps under
// <storePathRootDir>/config — topics (topics.json), subscription groups
// (subscriptionGroup.json), consumer offsets (consumerOffset.json) — with RocketMQ's JSON,
// atomic writes with a .bak (configfile.go), topic and group naming rules and permission
// bits, and the background writer that persists changes made on event loops.
//
// It depends on codec (the JSON bodies) and store (the ConsumerOffset shape a forced
// deletion reports) only; the broker's planes get the tables they need passed in.
package metadata

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Options are what the tables need from the broker's settings.
type Options struct {
	StorePathRootDir            string
	Topics                      TopicOptions
	AutoCreateSubscriptionGroup bool // autoCreateSubscriptionGroup
	// AutoCreateSubscriptionGroupLimit and AutoCreateRetryTopicLimit bound what clients create
	// implicitly (limits.go); ≤ 0: no limit.
	AutoCreateSubscriptionGroupLimit int
	AutoCreateRetryTopicLimit        int
	// ObserveAutoCreate, when set, is told about implicit creations and refusals (limits.go).
	ObserveAutoCreate           AutoCreateObserver
	FlushConsumerOffsetInterval time.Duration // flushConsumerOffsetInterval; ≤ 0: 5 s
	Clock                       func() time.Time
	Logger                      *slog.Logger
	// ObserveWrite, when set, is told the outcome of every write of a file, by file name
	// (TopicsFileName ...). Called on the writing goroutine; must not block.
	ObserveWrite func(file string, err error)
}

// Tables are the three tables and their background writer.
type Tables struct {
	Topics  *TopicConfigManager
	Groups  *SubscriptionGroupManager
	Offsets *ConsumerOffsetManager

	opts Options
	stop chan struct{}
	done chan struct{}
}

// Open builds the tables (topics start with RocketMQ's built-ins) and loads their files (or
// the .bak of a damaged one).
func Open(opts Options) (*Tables, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	t := &Tables{
		Topics:  NewTopicConfigManager(opts.Topics, opts.StorePathRootDir, opts.Clock, opts.Logger),
		Groups:  NewSubscriptionGroupManager(opts.AutoCreateSubscriptionGroup, opts.StorePathRootDir, opts.Clock, opts.Logger),
		Offsets: NewConsumerOffsetManager(opts.StorePathRootDir, opts.Logger),
		opts:    opts,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	t.Groups.SetAutoCreateLimit(opts.AutoCreateSubscriptionGroupLimit)
	t.Topics.SetAutoCreateRetryTopicLimit(opts.AutoCreateRetryTopicLimit)
	t.Groups.SetAutoCreateObserver(opts.ObserveAutoCreate)
	t.Topics.SetAutoCreateObserver(opts.ObserveAutoCreate)
	for _, load := range []func() error{t.Topics.Load, t.Groups.Load, t.Offsets.Load} {
		if err := load(); err != nil {
			return nil, err
		}
	}
	if observe := opts.ObserveWrite; observe != nil {
		for name, f := range t.files() {
			f.observe = func(err error) { observe(name, err) }
		}
	}
	return t, nil
}

func (t *Tables) files() map[string]*configFile {
	return map[string]*configFile{TopicsFileName: t.Topics.file, SubscriptionGroupFileName: t.Groups.file,
		ConsumerOffsetFileName: t.Offsets.file}
}

// StartWriter starts the background writer: topics.json and subscriptionGroup.json when they
// change, consumerOffset.json every flushConsumerOffsetInterval, and a failed write again on
// the next tick.
func (t *Tables) StartWriter() error {
	go t.write()
	return nil
}

func (t *Tables) write() {
	defer close(t.done)
	interval := t.opts.FlushConsumerOffsetInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	logErr := func(what string, err error) {
		if err != nil {
			t.opts.Logger.Error("broker: writing config file failed; will retry", "file", what, "err", err)
		}
	}
	for {
		select {
		case <-t.stop:
			return
		case <-t.Topics.file.kick:
			logErr(TopicsFileName, t.Topics.file.persistIfDirty())
		case <-t.Groups.file.kick:
			logErr(SubscriptionGroupFileName, t.Groups.file.persistIfDirty())
		case <-ticker.C:
			logErr(ConsumerOffsetFileName, t.Offsets.file.persistIfDirty())
			// Retry writes that failed before.
			logErr(TopicsFileName, t.Topics.file.persistIfDirty())
			logErr(SubscriptionGroupFileName, t.Groups.file.persistIfDirty())
		}
	}
}

// StopWriter stops the writer and writes every pending change. Call once, after a successful
// StartWriter.
func (t *Tables) StopWriter(context.Context) error {
	close(t.stop)
	<-t.done
	return errors.Join(t.Topics.file.persistIfDirty(), t.Groups.file.persistIfDirty(), t.Offsets.file.persistIfDirty())
}
