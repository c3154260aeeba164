package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The epoch handshake of controller mode. RocketMQ 4.x replication has none: the slave's first report is
// its CommitLog end, and the master cannot tell whether the bytes before it are its own. In controller
// mode a master changes (the controller elects another replica), and a replica that comes back may hold
// a tail the new master never had; RocketMQ 5's AutoSwitch HA answers that with a handshake carrying
// epochs. ringmq's is smaller, and starts the connection in place of the first report:
//
//	slave → master                                    master → slave
//	+---------------------------+                     +---------------------------+
//	| magic             int64   |                     | magic             int64   |
//	| brokerId          int64   |                     | status            int32   |  0 follow, 1 truncate, 2 refused
//	| maxOffset         int64   |                     | offset            int64   |  where the slave follows from / truncates to
//	| entries           int32   |                     | entries           int32   |  the master's epoch entries
//	| epoch int32, start int64  | × entries           | epoch int32, start int64  | × entries
//	+---------------------------+                     +---------------------------+
//
// The magic is negative, so that a 4.x master takes it for a bad report and closes the connection
// instead of streaming bytes a controller-mode slave cannot place. After status 0 the connection goes on
// as in 4.x (frames one way, 8-byte reports the other), maxOffset counting as the first report; after 1
// or 2 the master closes it: the slave truncates its CommitLog to offset and connects again (1), or
// stops and waits for its operator (2, nothing in common: wipe its store).

// handshakeMagic starts a controller-mode handshake ("ringmq\x01" negated). A variable, so that its bits
// convert to uint64 (a negative constant does not).
var handshakeMagic int64 = -0x72696e676d7101

// maxHandshakeEntries bounds the epoch entries a handshake carries (an epoch per election: far more
// than a broker group sees).
const maxHandshakeEntries = 4096

// HandshakeStatus is the master's answer to a handshake.
type HandshakeStatus int32

const (
	// HandshakeFollow: the slave's CommitLog is a prefix of the master's; the transfer starts at its end.
	HandshakeFollow HandshakeStatus = 0
	// HandshakeTruncate: the slave holds a tail the master does not; it truncates to the offset given
	// and connects again.
	HandshakeTruncate HandshakeStatus = 1
	// HandshakeRefused: the two share no epoch; the slave's store must be wiped.
	HandshakeRefused HandshakeStatus = 2
)

// String names the status.
func (s HandshakeStatus) String() string {
	switch s {
	case HandshakeFollow:
		return "follow"
	case HandshakeTruncate:
		return "truncate"
	case HandshakeRefused:
		return "refused"
	}
	return fmt.Sprintf("HandshakeStatus(%d)", int32(s))
}

// ErrHandshake: a handshake that does not parse.
var ErrHandshake = errors.New("ha: malformed epoch handshake")

// handshake is the slave's half.
type handshake struct {
	BrokerID  int64
	MaxOffset int64
	Entries   []EpochEntry
}

// handshakeReply is the master's half.
type handshakeReply struct {
	Status  HandshakeStatus
	Offset  int64
	Entries []EpochEntry
}

func appendEntries(b []byte, list []EpochEntry) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
	for _, e := range list {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b
}

func (h handshake) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(handshakeMagic))
	b = binary.BigEndian.AppendUint64(b, uint64(h.BrokerID))
	b = binary.BigEndian.AppendUint64(b, uint64(h.MaxOffset))
	return appendEntries(b, h.Entries)
}

func (r handshakeReply) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(handshakeMagic))
	b = binary.BigEndian.AppendUint32(b, uint32(r.Status))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Offset))
	return appendEntries(b, r.Entries)
}

// readEntries reads an entry count and the entries, checking the count and that they follow each other.
func readEntries(r io.Reader) ([]EpochEntry, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	count := int32(binary.BigEndian.Uint32(n[:]))
	if count < 0 || count > maxHandshakeEntries {
		return nil, fmt.Errorf("%w: %d epoch entries, want 0..%d", ErrHandshake, count, maxHandshakeEntries)
	}
	buf := make([]byte, 12*int(count))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	list := make([]EpochEntry, count)
	for i := range list {
		list[i] = EpochEntry{Epoch: int32(binary.BigEndian.Uint32(buf[12*i:])),
			StartOffset: int64(binary.BigEndian.Uint64(buf[12*i+4:]))}
		if e := list[i]; e.Epoch < 0 || e.StartOffset < 0 {
			return nil, fmt.Errorf("%w: epoch entry %d: epoch %d at %d", ErrHandshake, i, e.Epoch, e.StartOffset)
		}
		if err := checkFollows(list, i); err != nil {
			return nil, fmt.Errorf("%w: epoch entry %d: %w", ErrHandshake, i, err)
		}
	}
	return list, nil
}

// readHandshakeBody reads what follows the magic of a slave's handshake.
func readHandshakeBody(r io.Reader) (handshake, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return handshake{}, err
	}
	h := handshake{BrokerID: int64(binary.BigEndian.Uint64(b[:])), MaxOffset: int64(binary.BigEndian.Uint64(b[8:]))}
	if h.BrokerID < 0 || h.MaxOffset < 0 {
		return h, fmt.Errorf("%w: brokerId %d, maxOffset %d", ErrHandshake, h.BrokerID, h.MaxOffset)
	}
	var err error
	h.Entries, err = readEntries(r)
	return h, err
}

// readHandshakeReply reads a master's answer.
func readHandshakeReply(r io.Reader) (handshakeReply, error) {
	var b [20]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return handshakeReply{}, err
	}
	if magic := int64(binary.BigEndian.Uint64(b[:])); magic != handshakeMagic {
		return handshakeReply{}, fmt.Errorf("%w: answer starts with %#x, not the handshake magic (a 4.x master?)",
			ErrHandshake, uint64(magic))
	}
	rep := handshakeReply{Status: HandshakeStatus(binary.BigEndian.Uint32(b[8:])), Offset: int64(binary.BigEndian.Uint64(b[12:]))}
	if rep.Status < HandshakeFollow || rep.Status > HandshakeRefused || rep.Offset < 0 {
		return rep, fmt.Errorf("%w: status %d, offset %d", ErrHandshake, rep.Status, rep.Offset)
	}
	var err error
	rep.Entries, err = readEntries(r)
	return rep, err
}

// answerHandshake is the master's decision for a slave's handshake, given its own epoch entries and
// CommitLog end. An empty slave follows from its end (0: the master's last file, as a new 4.x slave).
// Otherwise the consistent point decides: at the slave's end it follows; below it, it truncates there.
// Nothing in common: refused.
func answerHandshake(h handshake, entries []EpochEntry, maxOffset int64) handshakeReply {
	if h.MaxOffset == 0 {
		return handshakeReply{Status: HandshakeFollow, Offset: 0, Entries: entries}
	}
	point, ok := ConsistentPoint(entries, maxOffset, h.Entries, h.MaxOffset)
	switch {
	case !ok:
		return handshakeReply{Status: HandshakeRefused, Entries: entries}
	case point < h.MaxOffset:
		return handshakeReply{Status: HandshakeTruncate, Offset: point, Entries: entries}
	}
	return handshakeReply{Status: HandshakeFollow, Offset: h.MaxOffset, Entries: entries}
}
