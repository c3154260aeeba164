package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// javaHash is String.hashCode for ASCII, written out independently of codec.
func javaHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}

// TestRecordAndEntryBytes builds a record, a ConsumeQueue entry and IndexFile entries by hand from
// PROTOCOL.md §5.1, §7.2 and §7.4 and compares them byte for byte with the files the store wrote.
func TestRecordAndEntryBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	storeTime := time.UnixMilli(1_700_000_001_234)
	clock := testutil.NewManualClockAt(storeTime)
	s := openStarted(t, cfg, Deps{Clock: clock.Now})

	props := "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01U1\x02"
	m := &codec.Message{Topic: "TopicA", QueueID: 1, Flag: 7, Body: []byte("hello"), Properties: []byte(props),
		BornTimestamp: 1_700_000_000_000, BornHost: testBornHost, ReconsumeTimes: 2}
	res := mustPut(t, s, m)
	require.Equal(t, int64(0), res.WroteOffset)
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown())

	// §5.1, field by field.
	be := binary.BigEndian
	var want []byte
	size := 91 + 5 + 6 + len(props)
	want = be.AppendUint32(want, uint32(size))
	want = be.AppendUint32(want, 0xDAA320A7)                                    // MAGICCODE V1
	want = be.AppendUint32(want, uint32(crc32IEEE([]byte("hello"))&0x7FFFFFFF)) // BODYCRC
	want = be.AppendUint32(want, 1)                                             // QUEUEID
	want = be.AppendUint32(want, 7)                                             // FLAG
	want = be.AppendUint64(want, 0)                                             // QUEUEOFFSET
	want = be.AppendUint64(want, 0)                                             // PHYSICALOFFSET
	want = be.AppendUint32(want, 0)                                             // SYSFLAG
	want = be.AppendUint64(want, 1_700_000_000_000)                             // BORNTIMESTAMP
	want = append(want, 10, 0, 0, 1)                                            // BORNHOST
	want = be.AppendUint32(want, 5000)
	want = be.AppendUint64(want, 1_700_000_001_234) // STORETIMESTAMP
	want = append(want, 127, 0, 0, 1)               // STOREHOSTADDRESS
	want = be.AppendUint32(want, 10911)
	want = be.AppendUint32(want, 2) // RECONSUMETIMES
	want = be.AppendUint64(want, 0) // PREPARED_TRANSACTION_OFFSET
	want = be.AppendUint32(want, 5) // BODYLEN
	want = append(want, "hello"...)
	want = append(want, 6) // TOPICLEN
	want = append(want, "TopicA"...)
	want = be.AppendUint16(want, uint16(len(props)))
	want = append(want, props...)
	require.Len(t, want, size)

	cl, err := os.ReadFile(filepath.Join(dir, "commitlog", "00000000000000000000"))
	require.NoError(t, err)
	require.Len(t, cl, testFileSize)
	require.Equal(t, want, cl[:size])
	require.Equal(t, make([]byte, testFileSize-size), cl[size:], "nothing after the last record")

	// §7.2: 20-byte entry (physical offset, size, Java hash of TAGS).
	cq, err := os.ReadFile(filepath.Join(dir, "consumequeue", "TopicA", "1", "00000000000000000000"))
	require.NoError(t, err)
	var entry []byte
	entry = be.AppendUint64(entry, 0)
	entry = be.AppendUint32(entry, uint32(size))
	entry = be.AppendUint64(entry, uint64(int64(javaHash("TagA"))))
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0x27, 0xA8, 0x07}, entry[12:], "hashCode(TagA) = 2598919")
	require.Equal(t, entry, cq[:20])
	require.Equal(t, make([]byte, 20), cq[20:40])

	// §7.4: header and three entries (UNIQ_KEY first, then each KEYS word).
	idxFiles, err := os.ReadDir(filepath.Join(dir, "index"))
	require.NoError(t, err)
	require.Len(t, idxFiles, 1)
	require.Len(t, idxFiles[0].Name(), 17)
	idx, err := os.ReadFile(filepath.Join(dir, "index", idxFiles[0].Name()))
	require.NoError(t, err)
	slots, num := cfg.MaxHashSlotNum, cfg.MaxIndexNum
	require.Len(t, idx, 40+slots*4+num*20)
	require.Equal(t, uint64(1_700_000_001_234), be.Uint64(idx[0:]), "beginTimestamp")
	require.Equal(t, uint64(1_700_000_001_234), be.Uint64(idx[8:]), "endTimestamp")
	require.Equal(t, uint64(0), be.Uint64(idx[16:]), "beginPhyOffset")
	require.Equal(t, uint64(0), be.Uint64(idx[24:]), "endPhyOffset")
	require.Equal(t, uint32(4), be.Uint32(idx[36:]), "indexCount starts at 1")
	keys := []string{"TopicA#U1", "TopicA#k1", "TopicA#k2"}
	usedSlots := map[int]bool{}
	for i, k := range keys {
		h := javaHash(k)
		if h < 0 {
			h = -h
		}
		slot := int(h) % slots
		usedSlots[slot] = true
		e := 40 + slots*4 + (i+1)*20
		var wantEntry []byte
		wantEntry = be.AppendUint32(wantEntry, uint32(h))
		wantEntry = be.AppendUint64(wantEntry, 0) // phyOffset
		wantEntry = be.AppendUint32(wantEntry, 0) // timeDiff
		wantEntry = be.AppendUint32(wantEntry, 0) // prevIndex (no collision among these keys)
		require.Equal(t, wantEntry, idx[e:e+20], "entry %d (%s)", i+1, k)
		require.Equal(t, uint32(i+1), be.Uint32(idx[40+slot*4:]), "slot of %s", k)
	}
	require.Equal(t, uint32(len(usedSlots)), be.Uint32(idx[32:]), "hashSlotCount")

	// Checkpoint: RocketMQ's first field is the last durable record's store time.
	ck, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	require.NoError(t, err)
	require.Len(t, ck, 4096)
	require.Equal(t, uint64(1_700_000_001_234), be.Uint64(ck[0:]))
	_, err = os.Stat(filepath.Join(dir, "abort"))
	require.ErrorIs(t, err, os.ErrNotExist, "clean shutdown removes the abort file")
}

func TestLongRetryTopicUsesV2Magic(t *testing.T) {
	s := openStarted(t, testConfig(t.TempDir()), Deps{})
	topic := "%RETRY%" + strings.Repeat("g", 150)
	res := mustPut(t, s, testMessage(topic, 0, []byte("x")))
	rec, release, err := s.LookMessageByOffset(res.WroteOffset)
	require.NoError(t, err)
	defer release()
	require.Equal(t, uint32(0xDAA320AB), binary.BigEndian.Uint32(rec[4:]))
	require.Equal(t, uint16(len(topic)), binary.BigEndian.Uint16(rec[88+1:]))

	_, err = s.PutMessage(testMessage(strings.Repeat("t", 128), 0, []byte("x")))
	require.ErrorIs(t, err, ErrMessageIllegal)
}
