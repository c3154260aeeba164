package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzConsumeQueueEntry(f *testing.F) {
	f.Add(int64(0), int32(0), int64(0))
	f.Add(int64(1<<40), int32(1234), int64(-1))
	f.Fuzz(func(t *testing.T, phys int64, size int32, tags int64) {
		var b [ConsumeQueueEntryBytes]byte
		putEntry(b[:], phys, size, tags)
		p, s, g := readEntry(b[:])
		require.Equal(t, phys, p)
		require.Equal(t, size, s)
		require.Equal(t, tags, g)
	})
}

func FuzzCheckpoint(f *testing.F) {
	good := checkpointData{PhysicMsgTimestamp: 5, LogicsMsgTimestamp: 6, IndexMsgTimestamp: 7, Valid: true,
		PhysicFlushedOffset: 100, LogicsOffset: 90, IndexFileID: 20240101000000000, IndexCount: 3}
	f.Add(good.encode())
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeCheckpoint(data) // never panics on any bytes
		if !c.Valid {
			return
		}
		require.Equal(t, c, decodeCheckpoint(c.encode()))
	})
}

// FuzzIndexFile feeds arbitrary bytes as an IndexFile (header, slots and entries from a damaged disk):
// queries and appends must stay inside the file and never panic.
func FuzzIndexFile(f *testing.F) {
	f.Add([]byte{}, "k", int64(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0x7f, 0xff, 0xff, 0xff}, "T#a", int64(5))
	const slots, num = 8, 16
	f.Fuzz(func(t *testing.T, data []byte, key string, phys int64) {
		buf := make([]byte, indexFileBytes(slots, num))
		copy(buf, data)
		idx := &indexFile{mf: &mappedFile{data: buf}, slotNum: slots, indexNum: num}
		idx.loadHeader()
		_ = idx.selectPhyOffsets(nil, []byte(key), 64, 0, 1<<62)
		for i := 0; i < num+1; i++ {
			idx.putKey([]byte(key), phys+int64(i), int64(i)*1000)
		}
		got := idx.selectPhyOffsets(nil, []byte(key), 64, 0, 1<<62)
		require.LessOrEqual(t, len(got), num)
		idx.rebuild(idx.indexCount.Load())
	})
}
