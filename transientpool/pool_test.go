package transientpool

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
)

func smallConfig(buffers int) Config {
	return Config{Buffers: buffers, BufferBytes: 4 * os.Getpagesize(), Pinned: true}
}

// fakeMem tracks what the pool does to memory, and can fail mlock.
type fakeMem struct {
	lockErr  error
	locked   int
	unlocked int
	freed    int
}

func (f *fakeMem) ops() memOps {
	return memOps{
		alloc: func(size int) ([]byte, error) { return make([]byte, size), nil },
		free:  func([]byte) error { f.freed++; return nil },
		lock: func([]byte) error {
			if f.lockErr != nil && f.locked >= 1 { // fail on the second buffer: the first lock must be undone
				return f.lockErr
			}
			f.locked++
			return nil
		},
		unlock:       func([]byte) error { f.unlocked++; return nil },
		memlockLimit: func() (uint64, uint64, bool) { return 65536, 65536, true },
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	require.Equal(t, int64(5<<30), DefaultConfig().TotalBytes())
	for name, tc := range map[string]struct {
		cfg   Config
		field string
	}{
		"no buffers":     {Config{Buffers: 0, BufferBytes: 4096}, "transientStorePoolSize"},
		"too many":       {Config{Buffers: MaxBuffers + 1, BufferBytes: 4096}, "transientStorePoolSize"},
		"zero size":      {Config{Buffers: 1, BufferBytes: 0}, "BufferBytes"},
		"not page sized": {Config{Buffers: 1, BufferBytes: os.Getpagesize() + 1}, "page size"},
		"negative size":  {Config{Buffers: 1, BufferBytes: -4096}, "BufferBytes"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorIs(t, err, ErrConfig)
			require.Contains(t, err.Error(), tc.field)
			_, err = New(tc.cfg, nil)
			require.ErrorIs(t, err, ErrConfig)
		})
	}
}

func TestBorrowReturnCycle(t *testing.T) {
	p, err := New(smallConfig(3), nil)
	require.NoError(t, err)
	require.True(t, p.Pinned(), "the test runs where mlock of 48 KiB succeeds")
	require.Equal(t, 3, p.Available())
	require.Len(t, p.FixedBuffers(), 3)

	var got []*Buffer
	for i := 0; i < 3; i++ {
		b, ok := p.Borrow()
		require.True(t, ok)
		require.Equal(t, i, b.Index(), "buffers come out in index order")
		require.Len(t, b.Bytes(), 4*os.Getpagesize())
		require.Equal(t, &p.FixedBuffers()[i][0], &b.Bytes()[0], "FixedBuffers keeps index order")
		got = append(got, b)
	}
	_, ok := p.Borrow()
	require.False(t, ok, "an exhausted pool says so instead of allocating")
	require.Equal(t, 0, p.Available())

	// Writes land in the buffer and survive Return/Borrow (no clearing: the borrower tracks its positions).
	copy(got[1].Bytes(), "hello")
	p.Return(got[1])
	require.Equal(t, 1, p.Available())
	b, ok := p.Borrow()
	require.True(t, ok)
	require.Same(t, got[1], b)
	require.True(t, bytes.HasPrefix(b.Bytes(), []byte("hello")))

	err = p.Close()
	require.ErrorIs(t, err, ErrBuffersBorrowed)
	require.Contains(t, err.Error(), "3 of 3")
	for _, b := range got {
		p.Return(b)
	}
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), ErrClosed)
	_, ok = p.Borrow()
	require.False(t, ok)
	require.Equal(t, 0, p.Available())
}

func TestReturnMisusePanics(t *testing.T) {
	p, err := New(smallConfig(1), nil)
	require.NoError(t, err)
	other, err := New(smallConfig(1), nil)
	require.NoError(t, err)
	b, ok := p.Borrow()
	require.True(t, ok)
	ob, ok := other.Borrow()
	require.True(t, ok)

	require.PanicsWithValue(t, "transientpool: Return of a buffer that does not belong to this pool", func() { p.Return(ob) })
	require.Panics(t, func() { p.Return(nil) })
	p.Return(b)
	require.PanicsWithValue(t, "transientpool: buffer 0 returned twice", func() { p.Return(b) })

	other.Return(ob)
	require.NoError(t, p.Close())
	require.NoError(t, other.Close())
}

func TestBorrowReturnDoesNotAllocate(t *testing.T) {
	p, err := New(smallConfig(2), nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		b, ok := p.Borrow()
		if !ok {
			panic("borrow failed")
		}
		p.Return(b)
	})
	require.Zero(t, allocs)
	require.NoError(t, p.Close())
}

func TestConcurrentBorrowReturn(t *testing.T) {
	p, err := New(smallConfig(4), nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	owner := map[int]int{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				b, ok := p.Borrow()
				if !ok {
					continue
				}
				mu.Lock()
				_, dup := owner[b.Index()]
				owner[b.Index()] = g
				mu.Unlock()
				if dup {
					panic("buffer handed to two borrowers")
				}
				mu.Lock()
				delete(owner, b.Index())
				mu.Unlock()
				p.Return(b)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 4, p.Available())
	require.NoError(t, p.Close())
}

func TestMlockFailureNamesTheLimit(t *testing.T) {
	mem := &fakeMem{lockErr: errors.New("cannot allocate memory")}
	h := &logtest.Recorder{}
	_, err := newPool(smallConfig(2), slog.New(h), mem.ops())
	require.ErrorIs(t, err, ErrMemlock)
	msg := err.Error()
	need := smallConfig(2).TotalBytes()
	for _, want := range []string{
		"RLIMIT_MEMLOCK",
		fmt.Sprintf("at least %d bytes", need),
		"soft 65536 bytes, hard 65536 bytes",
		"ulimit -l",
		"LimitMEMLOCK=infinity",
		"--ulimit memlock=-1:-1",
		"transientStorePoolPinned=false",
		"cannot allocate memory",
	} {
		require.Contains(t, msg, want)
	}
	require.Equal(t, 1, mem.locked)
	require.Equal(t, 1, mem.unlocked, "the lock already taken is undone")
	require.Equal(t, 2, mem.freed, "every mapping is released")
	require.Empty(t, h.AtLevel(slog.LevelWarn))
}

func TestUnpinnedEscapeHatch(t *testing.T) {
	mem := &fakeMem{lockErr: errors.New("cannot allocate memory")}
	h := &logtest.Recorder{}
	cfg := smallConfig(3)
	cfg.Pinned = false
	p, err := newPool(cfg, slog.New(h), mem.ops())
	require.NoError(t, err)
	require.False(t, p.Pinned())
	warns := h.AtLevel(slog.LevelWarn)
	require.Len(t, warns, 1, "one line for the pool, not one per buffer")
	require.Contains(t, warns[0].Message, "transientStorePoolPinned=false")
	require.Equal(t, 3, p.Available())

	require.NoError(t, p.Close())
	require.Equal(t, 1, mem.unlocked, "only the lock taken before the failure is undone, at setup")
	require.Equal(t, 3, mem.freed)
}

func TestCloseUnlocksAndUnmaps(t *testing.T) {
	mem := &fakeMem{}
	p, err := newPool(smallConfig(3), nil, mem.ops())
	require.NoError(t, err)
	require.True(t, p.Pinned())
	require.Equal(t, 3, mem.locked)
	require.NoError(t, p.Close())
	require.Equal(t, 3, mem.unlocked)
	require.Equal(t, 3, mem.freed)
	require.Nil(t, p.FixedBuffers()[0], "no dangling slice into unmapped memory")
}
