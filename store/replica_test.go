package store

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/testutil"
)

// readLog copies the CommitLog [from, to) through ReadReplica.
func readLog(t testing.TB, s *Store, from, to int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < to; {
		b, release := s.ReadReplica(off, int(to-off))
		require.NotNil(t, release, "readable at %d", off)
		out = append(out, b...)
		off += int64(len(b))
		release()
	}
	return out
}

// TestReplicationMasterToSlave: a master store in each append and flush mode streams its CommitLog to a
// slave store over the HA protocol. The slave holds the same bytes at the same offsets, across file rolls,
// including records the master had only in its transient pool buffer (committed for the transfer), and dispatches its own
// ConsumeQueues from them: the same records per queue. A slave refuses puts.
func TestReplicationMasterToSlave(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			// The committer moves small records only when a file is full: the transfer must commit them.
			master := openStarted(t, lazyCommitConfig(t.TempDir(), mode.transient, mode.flush), Deps{})
			scfg := testConfig(t.TempDir())
			scfg.Slave = true
			scfg.TransientStorePoolEnable = mode.transient // ignored on a slave
			slave := openStarted(t, scfg, Deps{})
			require.Nil(t, slave.pool, "no transient pool on a slave")

			srvCfg := ha.DefaultServerConfig("127.0.0.1:0")
			srv, err := ha.NewServer(srvCfg, master, nil)
			require.NoError(t, err)
			master.SetPublishListener(srv.Notify)
			srv.Start()
			t.Cleanup(func() { _ = srv.Close() })
			client, err := ha.NewClient(ha.DefaultClientConfig(srv.Addr().String()), slave, nil)
			require.NoError(t, err)
			client.Start()
			t.Cleanup(func() { _ = client.Close() })

			// A new slave starts at the master's last file: let it start while that is the first one.
			first := mustPut(t, master, testMessage("TopicR", 3, []byte("first")))
			testutil.Eventually(t, "the slave starts", func() bool { return slave.MaxPhyOffset() == first.EndOffset() })
			var sent []PutResult
			for i := range 300 { // ~3 CommitLog files of 64 KiB
				body := bytes.Repeat(bodyf("m%03d-", i), 1+i%280)
				sent = append(sent, mustPut(t, master, testMessage("TopicR", int32(i%3), body, codec.PropertyKeys, bodyString("k", i))))
			}
			end := master.MaxPhyOffset()
			require.Greater(t, end, 2*int64(testFileSize))
			testutil.Eventually(t, "the slave catches up", func() bool { return slave.MaxPhyOffset() == end })
			testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() == end })
			require.Equal(t, readLog(t, master, 0, end), readLog(t, slave, 0, end), "byte-identical CommitLogs")

			waitDispatched(t, slave)
			for q := int32(0); q < 3; q++ {
				want, got := getAll(t, master, "TopicR", q), getAll(t, slave, "TopicR", q)
				require.Len(t, got, 100)
				for i := range want {
					require.Equal(t, want[i].Body, got[i].Body)
					require.Equal(t, want[i].PhysicalOffset, got[i].PhysicalOffset)
					require.Equal(t, want[i].QueueOffset, got[i].QueueOffset)
				}
			}
			q, err := slave.QueryMessage("TopicR", "k-7", 10, 0, 1<<62)
			require.NoError(t, err)
			require.Len(t, q.Buffers, 1, "the slave indexes keys too")
			q.Release()
			rec, release, err := slave.LookMessageByOffset(sent[42].WroteOffset)
			require.NoError(t, err)
			d, err := codec.DecodeRecord(rec, true)
			require.NoError(t, err)
			require.Equal(t, bytes.Repeat(bodyf("m%03d-", 42), 1+42%280), d.Body)
			release()

			res, err := slave.PutMessage(testMessage("TopicR", 0, []byte("x")))
			require.ErrorIs(t, err, ErrSlave)
			require.Equal(t, ServiceNotAvailable, res.Status)
		})
	}
}

func bodyString(prefix string, i int) string { return prefix + "-" + string(bodyf("%d", i)) }

// TestSlaveRestartResumesFromItsEnd: a slave stopped and opened again reports its own end and gets the
// rest, byte for byte; its ConsumeQueues continue without a gap.
func TestSlaveRestartResumesFromItsEnd(t *testing.T) {
	master := openStarted(t, testConfig(t.TempDir()), Deps{})
	scfg := testConfig(t.TempDir())
	scfg.Slave = true
	srv, err := ha.NewServer(ha.DefaultServerConfig("127.0.0.1:0"), master, nil)
	require.NoError(t, err)
	master.SetPublishListener(srv.Notify)
	srv.Start()
	t.Cleanup(func() { _ = srv.Close() })
	put := func(from, to int) {
		for i := from; i < to; i++ {
			mustPut(t, master, testMessage("TopicS", 0, bytes.Repeat(bodyf("s%03d-", i), 1+i%200)))
		}
	}
	follow := func(s *Store) *ha.Client {
		c, err := ha.NewClient(ha.DefaultClientConfig(srv.Addr().String()), s, nil)
		require.NoError(t, err)
		c.Start()
		return c
	}
	slave := openStarted(t, scfg, Deps{})
	c := follow(slave)
	put(0, 1)
	testutil.Eventually(t, "the slave starts", func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() })
	put(1, 150)
	testutil.Eventually(t, "caught up", func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() })
	require.NoError(t, c.Close())
	waitDispatched(t, slave)
	require.NoError(t, slave.Shutdown())

	put(150, 400) // while the slave is down
	slave = reopen(t, scfg, Deps{})
	c = follow(slave)
	defer c.Close()
	end := master.MaxPhyOffset()
	testutil.Eventually(t, "caught up again", func() bool { return slave.MaxPhyOffset() == end })
	require.Equal(t, readLog(t, master, 0, end), readLog(t, slave, 0, end))
	waitDispatched(t, slave)
	got := getAll(t, slave, "TopicS", 0)
	require.Len(t, got, 400)
	for i, r := range got {
		require.Equal(t, int64(i), r.QueueOffset)
	}
}

// TestSlaveShutdownWithAPartialRecord: a master that dies mid-frame leaves its slave with the first bytes
// of a record only. The slave dispatches the whole records before it, waits for the rest without spinning,
// and shuts down; reopened, it has cut the partial record, as a Java slave's recovery does, and takes the
// record again from its start: a restarted master, which cannot know it sent those bytes, would refuse a
// slave whose offset is inside a record.
func TestSlaveShutdownWithAPartialRecord(t *testing.T) {
	master, end := masterWithALastRecord(t, "partial", bodyf("partial-%d", 3))
	whole := readLog(t, master, 0, end)

	scfg := testConfig(t.TempDir())
	scfg.Slave = true
	slave := openStarted(t, scfg, Deps{})
	torn := readLog(t, master, 0, end+10) // the last record's first 10 bytes
	require.NoError(t, slave.AppendReplica(0, len(torn), bytes.NewReader(torn)))
	testutil.Eventually(t, "whole records dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 3 })

	done := make(chan error, 1)
	go func() { done <- slave.Shutdown() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the slave's Shutdown did not return with a partial record at its CommitLog's end")
	}
	// Reopened after the clean stop, it ends where its last whole record ends: the master's next frame
	// sends the record whole.
	slave = reopen(t, scfg, Deps{})
	require.Equal(t, end, slave.MaxPhyOffset())
	require.Equal(t, whole, readLog(t, slave, 0, end))
	require.Equal(t, int64(3), slave.GetMaxOffsetInQueue("TopicP", 0))
	all := master.MaxPhyOffset()
	rest := readLog(t, master, end, all)
	require.NoError(t, slave.AppendReplica(end, len(rest), bytes.NewReader(rest)))
	testutil.Eventually(t, "the completed record dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 4 })
	require.Equal(t, readLog(t, master, 0, all), readLog(t, slave, 0, all))
}

// masterWithALastRecord opens a master store holding three whole records of TopicP queue 0 (bodies
// prefix-0, -1, -2) and then one with body last; end is where the third ends and the last one starts.
func masterWithALastRecord(t *testing.T, prefix string, last []byte) (master *Store, end int64) {
	t.Helper()
	master = openStarted(t, testConfig(t.TempDir()), Deps{})
	for i := range 3 {
		mustPut(t, master, testMessage("TopicP", 0, bodyf("%s-%d", prefix, i)))
	}
	end = master.MaxPhyOffset()
	mustPut(t, master, testMessage("TopicP", 0, last))
	return master, end
}

// TestReadReplicaStopsAtThePublishedEnd: between a put's two publication stores (the file's wrote, then
// the CommitLog's maxOffset) ReadReplica must not hand out bytes past MaxPhyOffset: a slave that reported
// them would be taken for one ahead of its master and disconnected (seen under SYNC_MASTER load).
func TestReadReplicaStopsAtThePublishedEnd(t *testing.T) {
	s := openStarted(t, testConfig(t.TempDir()), Deps{})
	res := mustPut(t, s, testMessage("T", 0, []byte("published")))
	end := res.EndOffset()
	mf := s.commitLog.mfq.last()
	mf.wrote.Add(100) // a put halfway through its publication
	defer mf.wrote.Add(-100)
	b, release := s.ReadReplica(0, 1<<20)
	require.NotNil(t, release)
	require.Len(t, b, int(end), "up to MaxPhyOffset, not up to the file's wrote")
	release()
}

// progressReader reads from r and notes the store's published end at each Read.
type progressReader struct {
	r    io.Reader
	s    *Store
	seen []int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	p.seen = append(p.seen, p.s.MaxPhyOffset())
	return p.r.Read(b)
}

// TestSlaveAppendsWithWrite: a slave writes replicated bytes to the file (pwrite) a MiB read at a time,
// each published once written, so a large frame is readable before its end has arrived; the readers'
// mapping shows them. It never populates its CommitLog mapping, ahead or in prepared files (populating
// gave large zeroed folios and writable mappings that a write does not need).
func TestSlaveAppendsWithWrite(t *testing.T) {
	mcfg := testConfig(t.TempDir())
	mcfg.MappedFileSizeCommitLog = 4 << 20
	master := openStarted(t, mcfg, Deps{})
	for i := 0; master.MaxPhyOffset() < 4<<20+100; i++ {
		mustPut(t, master, testMessage("TopicW", int32(i%2), bytes.Repeat(bodyf("w%04d-", i), 500)))
	}
	end := master.MaxPhyOffset()
	data := readLog(t, master, 0, end)
	cfg := testConfig(t.TempDir())
	cfg.Slave = true
	cfg.MappedFileSizeCommitLog = 4 << 20
	s := openStarted(t, cfg, Deps{})

	first := 3<<20 + 123 // mid-record: the dispatcher waits for the rest
	pr := &progressReader{r: bytes.NewReader(data[:first]), s: s}
	require.NoError(t, s.AppendReplica(0, first, pr))
	require.Equal(t, int64(first), s.MaxPhyOffset())
	require.Contains(t, pr.seen, int64(1<<20), "the first MiB was published while the rest was read")
	require.Contains(t, pr.seen, int64(2<<20))
	require.NoError(t, s.AppendReplica(int64(first), 4<<20-first, bytes.NewReader(data[first:4<<20])))
	require.NoError(t, s.AppendReplica(4<<20, int(end-4<<20), bytes.NewReader(data[4<<20:]))) // the next file
	require.Equal(t, end, s.MaxPhyOffset())
	require.Equal(t, data, readLog(t, s, 0, end), "the mapping shows what was written")
	waitDispatched(t, s)
	for q := int32(0); q < 2; q++ {
		require.Equal(t, len(getAll(t, master, "TopicW", q)), len(getAll(t, s, "TopicW", q)))
	}

	testutil.Eventually(t, "the prepared files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	files := s.commitLog.mfq.snapshot()
	require.Len(t, files, 2)
	s.commitLog.allocMu.Lock()
	files = append(files, s.commitLog.standbys...)
	s.commitLog.allocMu.Unlock()
	for _, mf := range files {
		require.Zero(t, mf.populated.Load(), "file %s populated", mf.path)
	}
	require.Zero(t, s.commitLog.prefaultTo.Load(), "nothing prefaulted")
}

// TestCatchUpFramesFromTheFile: a slave far behind gets catch-up frames that the master sends with
// sendfile(2) from its CommitLog file, in every append mode; with the transient pool, the acknowledged
// bytes not committed to the file yet still reach it (committed for the transfer). The slave ends byte-identical.
func TestCatchUpFramesFromTheFile(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			mcfg := lazyCommitConfig(t.TempDir(), mode.transient, mode.flush)
			mcfg.MappedFileSizeCommitLog = 512 << 10
			master := openStarted(t, mcfg, Deps{})
			scfg := testConfig(t.TempDir())
			scfg.Slave = true
			scfg.MappedFileSizeCommitLog = mcfg.MappedFileSizeCommitLog
			slave := openStarted(t, scfg, Deps{})
			srv, err := ha.NewServer(ha.DefaultServerConfig("127.0.0.1:0"), master, nil)
			require.NoError(t, err)
			master.SetPublishListener(srv.Notify)
			srv.Start()
			t.Cleanup(func() { _ = srv.Close() })
			follow := func() *ha.Client {
				c, err := ha.NewClient(ha.DefaultClientConfig(srv.Addr().String()), slave, nil)
				require.NoError(t, err)
				c.Start()
				return c
			}
			c := follow()
			mustPut(t, master, testMessage("TopicF", 0, []byte("first")))
			testutil.Eventually(t, "the slave starts", func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() })
			require.NoError(t, c.Close())
			for i := range 400 { // ~1.6 MiB: three files and a bit
				mustPut(t, master, testMessage("TopicF", 0, bytes.Repeat(bodyf("f%03d-", i), 4000/5)))
			}
			// With the transient pool, full files reach their file only when the committer gets to them
			// (asynchronously after the roll): commit now, so that what goes by sendfile does not depend on
			// the committer's timing, then put one record more that stays in the pool buffer (committed
			// by the transfer).
			require.NoError(t, master.Commit(0))
			mustPut(t, master, testMessage("TopicF", 0, []byte("last, maybe only in the pool buffer")))
			end := master.MaxPhyOffset()
			require.Greater(t, end, 3*mcfg.MappedFileSizeCommitLog)
			c = follow()
			defer c.Close()
			testutil.Eventually(t, "caught up", func() bool { return slave.MaxPhyOffset() == end })
			require.Equal(t, readLog(t, master, 0, end), readLog(t, slave, 0, end), "byte-identical CommitLogs")
			require.Greater(t, srv.SendfileBytes(), int64(mcfg.MappedFileSizeCommitLog), "whole files went by sendfile")
			waitDispatched(t, slave)
			require.Len(t, getAll(t, slave, "TopicF", 0), 402)
		})
	}
}

// TestReadReplicaFile: the file view covers the bytes that are in the CommitLog file, and never bytes
// still only in the transient pool buffer.
func TestReadReplicaFile(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			s := openStarted(t, lazyCommitConfig(t.TempDir(), mode.transient, mode.flush), Deps{})
			mustPut(t, s, testMessage("TopicF", 0, []byte("in the file or the pool")))
			end := s.MaxPhyOffset()
			rc, pos, n, release, ok := s.ReadReplicaFile(0, 1<<20)
			if mode.transient {
				require.False(t, ok, "not committed: only the pool buffer has it")
				return
			}
			require.True(t, ok)
			defer release()
			require.Equal(t, int64(0), pos)
			require.Equal(t, int(end), n)
			var got []byte
			require.NoError(t, rc.Control(func(fd uintptr) {
				got = make([]byte, n)
				_, err := syscall.Pread(int(fd), got, pos)
				require.NoError(t, err)
			}))
			require.Equal(t, readLog(t, s, 0, end), got)
			_, _, _, _, ok = s.ReadReplicaFile(end, 10)
			require.False(t, ok, "nothing past the end")
		})
	}
}

// TestReadReplicaServesOnlyCommittedBytes: a slave is never handed bytes its master could lose in a process
// crash. With the transient pool, a record still only in the pool buffer is committed into the file by the
// read that wants it (so the file holds whatever the slave gets); without the pool the mapping is the file.
func TestReadReplicaServesOnlyCommittedBytes(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			s := openStarted(t, lazyCommitConfig(t.TempDir(), mode.transient, mode.flush), Deps{})
			mustPut(t, s, testMessage("TopicC", 0, []byte("first")))
			end := s.MaxPhyOffset()
			_, _, _, _, inFile := s.ReadReplicaFile(0, 1<<20)
			require.Equal(t, !mode.transient, inFile, "before the read, the pool buffer alone has it")

			b, release := s.ReadReplica(0, 1<<20)
			require.NotNil(t, release)
			require.Len(t, b, int(end))
			release()
			rc, pos, n, release, ok := s.ReadReplicaFile(0, 1<<20)
			require.True(t, ok, "what the slave got is in the file")
			require.Equal(t, int64(0), pos)
			require.Equal(t, int(end), n)
			var file []byte
			require.NoError(t, rc.Control(func(fd uintptr) {
				file = make([]byte, n)
				_, err := syscall.Pread(int(fd), file, 0)
				require.NoError(t, err)
			}))
			release()
			require.Equal(t, readLog(t, s, 0, end), file)
			rec, err := codec.DecodeRecord(file, true)
			require.NoError(t, err)
			require.Equal(t, "first", string(rec.Body))
		})
	}
}

// TestIsRecordStart: where a slave may resume: a file's start, each record's first byte, the published
// end; not inside a record, not past the end, in every append mode (with the transient pool, before the
// bytes are committed too).
func TestIsRecordStart(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			s := openStarted(t, lazyCommitConfig(t.TempDir(), mode.transient, mode.flush), Deps{})
			var starts []int64
			for i := range 100 { // ~1.5 files of 64 KiB
				r := mustPut(t, s, testMessage("TopicS", 0, bytes.Repeat(bodyf("s%02d-", i), 1+i*10%400)))
				starts = append(starts, r.WroteOffset)
			}
			end := s.MaxPhyOffset()
			require.Greater(t, end, int64(testFileSize))
			for i, off := range starts {
				require.True(t, s.IsRecordStart(off), "record %d at %d", i, off)
				require.False(t, s.IsRecordStart(off+1), "inside record %d", i)
				require.False(t, s.IsRecordStart(off+8), "inside record %d", i)
			}
			require.True(t, s.IsRecordStart(int64(testFileSize)), "the second file's start")
			require.True(t, s.IsRecordStart(end), "the end")
			require.False(t, s.IsRecordStart(end+1), "past the end")
			require.False(t, s.IsRecordStart(-1))
			last := starts[len(starts)-1]
			if last < int64(testFileSize) {
				t.Fatalf("the last record should be in the second file, at %d", last)
			}
			// The blank at the end of the first file: its first byte ends the records, the rest is padding.
			var lastInFirst int64
			for _, off := range starts {
				if off < int64(testFileSize) {
					lastInFirst = off
				}
			}
			b, release := s.ReadReplica(lastInFirst, 1<<20)
			rec, err := codec.DecodeRecord(b, true)
			release()
			require.NoError(t, err)
			blank := lastInFirst + int64(rec.TotalSize)
			require.Less(t, blank, int64(testFileSize))
			require.False(t, s.IsRecordStart(blank+8), "inside the blank padding")
		})
	}
}

// TestSlaveCrashWithADurablePartialRecord: a slave syncs its master's bytes as they come, so when the
// master dies mid-frame the slave's checkpoint can call the first bytes of a record durable. A crash of
// the slave then must not read that record as corruption below the durable offset: recovery cuts it, and
// the slave takes the record again from its start.
func TestSlaveCrashWithADurablePartialRecord(t *testing.T) {
	master, end := masterWithALastRecord(t, "partial", bodyf("partial-%d", 3))

	root := t.TempDir()
	scfg := testConfig(root)
	scfg.Slave = true
	slave := openStarted(t, scfg, Deps{})
	torn := readLog(t, master, 0, end+10) // the last record's first 10 bytes
	require.NoError(t, slave.AppendReplica(0, len(torn), bytes.NewReader(torn)))
	testutil.Eventually(t, "whole records dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 3 })
	require.NoError(t, slave.Flush(0))
	_, err := slave.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	require.Equal(t, end+10, slave.lastCheckpoint.PhysicFlushedOffset, "the partial record's bytes are durable")
	crash := t.TempDir()
	copyDir(t, root, crash) // the files and checkpoint as a killed process leaves them
	require.NoError(t, slave.Shutdown())

	scfg.StorePathRootDir = crash
	r := reopen(t, scfg, Deps{})
	require.False(t, r.LastExitOK())
	require.Equal(t, end, r.MaxPhyOffset(), "the partial record is cut, not taken for corruption")
	all := master.MaxPhyOffset()
	rest := readLog(t, master, end, all)
	require.NoError(t, r.AppendReplica(end, len(rest), bytes.NewReader(rest)))
	testutil.Eventually(t, "the record dispatched", func() bool { return r.GetMaxOffsetInQueue("TopicP", 0) == 4 })
	require.Equal(t, readLog(t, master, 0, all), readLog(t, r, 0, all))
}

var _ ha.TailTrimmer = (*Store)(nil) // the HA client cuts a running slave's partial record through it

// TestSlaveTrimsAPartialRecordWhileRunning: a running slave holding the first bytes of a record (its
// master died mid-frame) cuts them before it reports to a master again, without a restart, under both
// flush types. The master it comes back to restarted and lost that record: it writes a shorter one at
// the same offset, which the slave takes from its start. The cut bytes are zeros on disk, so none of
// the lost record stays behind the new one; a restart finds the new record as the last.
func TestSlaveTrimsAPartialRecordWhileRunning(t *testing.T) {
	for _, flushType := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(flushType.String(), func(t *testing.T) {
			master, end := masterWithALastRecord(t, "whole", body(600, "lost"))
			_, _, err := master.TrimPartialRecord()
			require.ErrorIs(t, err, ErrServiceNotAvailable, "a master's store is never cut")

			scfg := testConfig(t.TempDir())
			scfg.Slave, scfg.FlushDiskType = true, flushType
			slave := openStarted(t, scfg, Deps{})
			torn := readLog(t, master, 0, end+200) // the lost record's first 200 bytes
			require.NoError(t, slave.AppendReplica(0, len(torn), bytes.NewReader(torn)))
			testutil.Eventually(t, "whole records dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 3 })

			from, to, err := slave.TrimPartialRecord()
			require.NoError(t, err)
			require.Equal(t, [2]int64{end + 200, end}, [2]int64{from, to})
			require.Equal(t, end, slave.MaxPhyOffset())
			onDisk := func(from, to int64) []byte {
				f, err := os.Open(filepath.Join(scfg.commitLogDir(), fmt.Sprintf("%020d", 0)))
				require.NoError(t, err)
				defer f.Close()
				b := make([]byte, to-from)
				_, err = f.ReadAt(b, from)
				require.NoError(t, err)
				return b
			}
			require.Equal(t, make([]byte, 200), onDisk(end, end+200), "the cut bytes are zeros in the file")
			from, to, err = slave.TrimPartialRecord()
			require.NoError(t, err)
			require.Equal(t, [2]int64{end, end}, [2]int64{from, to}, "nothing more to cut")

			// The restarted master: the same three records, then a shorter fourth.
			restarted, restartedEnd := masterWithALastRecord(t, "whole", []byte("kept"))
			require.Equal(t, end, restartedEnd)
			end2 := restarted.MaxPhyOffset()
			require.Less(t, end2, end+200)
			rest := readLog(t, restarted, end, end2)
			require.NoError(t, slave.AppendReplica(end, len(rest), bytes.NewReader(rest)))
			testutil.Eventually(t, "the new record dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 4 })
			recs := getAll(t, slave, "TopicP", 0)
			require.Len(t, recs, 4)
			require.Equal(t, "kept", string(recs[3].Body))
			waitDispatched(t, slave)
			require.NoError(t, slave.Flush(0))
			require.Equal(t, rest, onDisk(end, end2))
			require.Equal(t, make([]byte, end+200-end2), onDisk(end2, end+200), "nothing of the lost record behind it")

			require.NoError(t, slave.Shutdown())
			slave = reopen(t, scfg, Deps{})
			require.Equal(t, end2, slave.MaxPhyOffset())
			require.Len(t, getAll(t, slave, "TopicP", 0), 4)
		})
	}
}
