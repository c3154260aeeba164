package flush

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
)

// workLog records each call a periodic service makes: when (since the bubble started) and leastPages.
type workLog struct {
	mu    sync.Mutex
	start time.Time
	calls []workCall
	bytes int64
	err   error
}

type workCall struct {
	at         time.Duration
	leastPages int
}

func (l *workLog) work(leastPages int) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, workCall{time.Since(l.start), leastPages})
	return l.bytes, l.err
}

func (l *workLog) get() []workCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]workCall(nil), l.calls...)
}

func (l *workLog) set(bytes int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bytes, l.err = bytes, err
}

func TestIntervalConfigs(t *testing.T) {
	require.Equal(t, IntervalConfig{500 * time.Millisecond, 4, 10 * time.Second}, DefaultCommitLogFlushConfig())
	require.Equal(t, IntervalConfig{time.Second, 2, 60 * time.Second}, DefaultConsumeQueueFlushConfig())
	require.Equal(t, IntervalConfig{200 * time.Millisecond, 4, 200 * time.Millisecond}, DefaultCommitConfig())
	for _, c := range []IntervalConfig{DefaultCommitLogFlushConfig(), DefaultConsumeQueueFlushConfig(), DefaultCommitConfig()} {
		require.NoError(t, c.Validate())
	}
	for field, c := range map[string]IntervalConfig{
		"Interval":         {0, 4, time.Second},
		"LeastPages":       {time.Second, -1, time.Second},
		"ThoroughInterval": {time.Second, 4, 0},
	} {
		err := c.Validate()
		require.ErrorIs(t, err, ErrConfig)
		require.Contains(t, err.Error(), field)
		_, err = NewIntervalFlusher("commitlog", c, (&workLog{}).work, nil, nil)
		require.ErrorIs(t, err, ErrConfig)
	}
	_, err := NewIntervalFlusher("commitlog", DefaultCommitLogFlushConfig(), nil, nil, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestIntervalFlusherSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &workLog{start: time.Now(), bytes: 4096}
		m, err := NewMetrics(nil, "commitlog_async")
		require.NoError(t, err)
		cfg := IntervalConfig{Interval: 500 * time.Millisecond, LeastPages: 4, ThoroughInterval: 2 * time.Second}
		f, err := NewIntervalFlusher("commitlog", cfg, log.work, m, nil)
		require.NoError(t, err)

		time.Sleep(2100 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []workCall{
			{500 * time.Millisecond, 4},
			{1000 * time.Millisecond, 4},
			{1500 * time.Millisecond, 4},
			{2000 * time.Millisecond, 0}, // ThoroughInterval passed: flush whatever is dirty
		}, log.get())

		// Wake flushes early, and the interval restarts from there.
		f.Wake()
		synctest.Wait()
		require.Equal(t, workCall{2100 * time.Millisecond, 4}, log.get()[4])
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, workCall{2600 * time.Millisecond, 4}, log.get()[5])

		require.NoError(t, f.Close())
		calls := log.get()
		require.Equal(t, workCall{2600 * time.Millisecond, 0}, calls[len(calls)-1], "Close flushes everything")
		require.Len(t, calls, 7)
		require.Equal(t, uint64(7*4096), m.Snapshot().Bytes)
		require.ErrorIs(t, f.Close(), ErrClosed)
	})
}

func TestIntervalFlusherErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &workLog{start: time.Now()}
		h := &logtest.Recorder{}
		reg := prometheus.NewRegistry()
		m, err := NewIntervalMetrics(reg, "consumequeue")
		require.NoError(t, err)
		f, err := NewIntervalFlusher("consumequeue", DefaultConsumeQueueFlushConfig(), log.work, m, slog.New(h))
		require.NoError(t, err)

		log.set(0, fmt.Errorf("%w: test", ErrNoSpace))
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		require.Len(t, log.get(), 3)
		require.Equal(t, uint64(3), m.Snapshot().Errors)
		require.Equal(t, 3.0, seriesValue(t, reg, "ringmq_flush_errors_total"))
		require.Len(t, h.AtLevel(slog.LevelError), 1, "a failure is logged when it starts, not on every run")

		log.set(100, nil)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, h.AtLevel(slog.LevelInfo), 1, "and its end is logged once")

		log.set(0, errors.New("disk gone"))
		err = f.Close()
		require.EqualError(t, err, "disk gone", "Close returns the final flush's error")
	})
}

func TestCommitServiceCallsCommittedHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &workLog{start: time.Now()}
		var mu sync.Mutex
		var hooks []int64
		c, err := NewCommitService("commitlog", DefaultCommitConfig(), log.work, func(n int64) {
			mu.Lock()
			defer mu.Unlock()
			hooks = append(hooks, n)
		}, nil, nil)
		require.NoError(t, err)

		time.Sleep(250 * time.Millisecond) // one run with nothing to commit
		synctest.Wait()
		require.Equal(t, []workCall{{200 * time.Millisecond, 0}}, log.get(), "thorough every 200 ms: always 0")

		log.set(8192, nil)
		c.Wake()
		synctest.Wait()
		require.Len(t, log.get(), 2)
		require.NoError(t, c.Close())
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []int64{8192, 8192}, hooks, "hook after every commit that moved bytes, Close's too")
	})
}
