package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The checkpoint file is one 4 KiB page. The first 40 bytes are RocketMQ's StoreCheckpoint, so its tools
// read it; ringmq adds its own section, checked by magic and CRC, with the offsets recovery trusts:
//
//	  0  int64  physicMsgTimestamp   store time of the last CommitLog record known durable
//	  8  int64  logicsMsgTimestamp   store time of the last record whose ConsumeQueue entry is durable
//	 16  int64  indexMsgTimestamp    same for the IndexFile
//	 24  int64  masterFlushedOffset  (5.x) = physicFlushedOffset
//	 32  int64  confirmPhyOffset     (5.x) 0
//	 64  uint32 magic 'RGMQ'         ringmq section starts here
//	 68  uint32 version 1
//	 72  int64  physicFlushedOffset  CommitLog bytes below are durable
//	 80  int64  logicsOffset         every ConsumeQueue and IndexFile entry of records below is durable
//	 88  int64  indexFileID          newest IndexFile at that moment (its name as a number)
//	 96  int32  indexCount           its entries then (1 = none)
//	100  int64  physicMsgTimestamp   copy of field 0: a mismatch means Apache RocketMQ wrote the file since
//	108  uint32 crc32 (IEEE) of bytes 64..108
//
// The file is replaced atomically (temporary file, fsync, rename, fsync of the directory), so a crash
// leaves either the old or the new checkpoint, never a torn one.
const (
	checkpointFileBytes = 4096
	checkpointMagic     = 0x52474D51 // "RGMQ"
	checkpointVersion   = 1
	checkpointRingmqOff = 64
	checkpointCRCOff    = 108
)

type checkpointData struct {
	PhysicMsgTimestamp  int64
	LogicsMsgTimestamp  int64
	IndexMsgTimestamp   int64
	MasterFlushedOffset int64
	ConfirmPhyOffset    int64

	// Valid: the ringmq section is present, intact and current.
	Valid               bool
	PhysicFlushedOffset int64
	LogicsOffset        int64
	IndexFileID         int64
	IndexCount          int32
}

func (c *checkpointData) encode() []byte {
	b := make([]byte, checkpointFileBytes)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(c.PhysicMsgTimestamp))
	be.PutUint64(b[8:], uint64(c.LogicsMsgTimestamp))
	be.PutUint64(b[16:], uint64(c.IndexMsgTimestamp))
	be.PutUint64(b[24:], uint64(c.MasterFlushedOffset))
	be.PutUint64(b[32:], uint64(c.ConfirmPhyOffset))
	be.PutUint32(b[64:], checkpointMagic)
	be.PutUint32(b[68:], checkpointVersion)
	be.PutUint64(b[72:], uint64(c.PhysicFlushedOffset))
	be.PutUint64(b[80:], uint64(c.LogicsOffset))
	be.PutUint64(b[88:], uint64(c.IndexFileID))
	be.PutUint32(b[96:], uint32(c.IndexCount))
	be.PutUint64(b[100:], uint64(c.PhysicMsgTimestamp))
	be.PutUint32(b[checkpointCRCOff:], crc32.ChecksumIEEE(b[checkpointRingmqOff:checkpointCRCOff]))
	return b
}

func decodeCheckpoint(b []byte) checkpointData {
	var c checkpointData
	if len(b) < 40 {
		return c
	}
	be := binary.BigEndian
	c.PhysicMsgTimestamp = int64(be.Uint64(b[0:]))
	c.LogicsMsgTimestamp = int64(be.Uint64(b[8:]))
	c.IndexMsgTimestamp = int64(be.Uint64(b[16:]))
	c.MasterFlushedOffset = int64(be.Uint64(b[24:]))
	c.ConfirmPhyOffset = int64(be.Uint64(b[32:]))
	if len(b) < checkpointCRCOff+4 ||
		be.Uint32(b[64:]) != checkpointMagic || be.Uint32(b[68:]) != checkpointVersion ||
		be.Uint32(b[checkpointCRCOff:]) != crc32.ChecksumIEEE(b[checkpointRingmqOff:checkpointCRCOff]) ||
		int64(be.Uint64(b[100:])) != c.PhysicMsgTimestamp {
		return c
	}
	c.Valid = true
	c.PhysicFlushedOffset = int64(be.Uint64(b[72:]))
	c.LogicsOffset = int64(be.Uint64(b[80:]))
	c.IndexFileID = int64(be.Uint64(b[88:]))
	c.IndexCount = int32(be.Uint32(b[96:]))
	return c
}

// readCheckpoint reads the checkpoint; a missing file is the zero value.
func readCheckpoint(fsys FS, path string) (checkpointData, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return checkpointData{}, nil
	}
	if err != nil {
		return checkpointData{}, fmt.Errorf("store: open checkpoint: %w", err)
	}
	defer f.Close()
	b := make([]byte, checkpointFileBytes)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return checkpointData{}, fmt.Errorf("store: read checkpoint: %w", err)
	}
	return decodeCheckpoint(b[:n]), nil
}

// writeCheckpoint replaces the checkpoint atomically.
func writeCheckpoint(fsys FS, path string, c checkpointData) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	_, werr := f.WriteAt(c.encode(), 0)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("store: write checkpoint: %w", werr)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	return nil
}
