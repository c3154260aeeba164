package readplane

import (
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// Queue offsets and times (PROTOCOL.md §3.3), answered SUCCESS with the store's value as
// the Java broker does (it checks neither topic nor queue: an unknown queue reads 0, or -1
// for the earliest store time).
//
//	GET_MAX_OFFSET 30              offset = next logical offset to be written   event loop
//	GET_MIN_OFFSET 31              offset = first logical offset still kept      event loop
//	SEARCH_OFFSET_BY_TIMESTAMP 29  offset of the first (LOWER, default) or last  query pool
//	                               (UPPER) entry stored at the timestamp
//	GET_EARLIEST_MSG_STORETIME 32  timestamp of the queue's first record         query pool
//
// Max and min offsets are in-memory counters; the other two binary-search ConsumeQueue
// files and read CommitLog records, which may fault pages in from disk.
//
// GET_MAX_OFFSET's 5.x "committed" flag is accepted and ignored: ringmq's ConsumeQueue
// holds only committed (dispatched) entries, so both answers are the same.

// ProcessGetMaxOffset serves GET_MAX_OFFSET (30) on the event loop.
func (p *Plane) ProcessGetMaxOffset(rc *remoting.Request) {
	to := rc.Reply
	var h codec.GetMaxOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	fields := [...]codec.Field{codec.NumField("offset", p.store.GetMaxOffsetInQueue(h.Topic, h.QueueID))}
	to.Answer(codec.ResponseSuccess, "", fields[:]...)
}

// ProcessGetMinOffset serves GET_MIN_OFFSET (31) on the event loop.
func (p *Plane) ProcessGetMinOffset(rc *remoting.Request) {
	to := rc.Reply
	var h codec.GetMinOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	fields := [...]codec.Field{codec.NumField("offset", p.store.GetMinOffsetInQueue(h.Topic, h.QueueID))}
	to.Answer(codec.ResponseSuccess, "", fields[:]...)
}

// ProcessSearchOffsetByTimestamp serves SEARCH_OFFSET_BY_TIMESTAMP (29): it decodes on the
// event loop and returns the search for the query pool.
func (p *Plane) ProcessSearchOffsetByTimestamp(rc *remoting.Request) (rest func()) {
	to := rc.Reply
	var h codec.SearchOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	return func() {
		offset := p.store.GetOffsetInQueueByTime(h.Topic, h.QueueID, h.Timestamp, h.BoundaryType == codec.BoundaryUpper)
		fields := [...]codec.Field{codec.NumField("offset", offset)}
		to.Answer(codec.ResponseSuccess, "", fields[:]...)
	}
}

// ProcessGetEarliestMsgStoretime serves GET_EARLIEST_MSG_STORETIME (32): it decodes on the
// event loop and returns the look-up for the query pool.
func (p *Plane) ProcessGetEarliestMsgStoretime(rc *remoting.Request) (rest func()) {
	to := rc.Reply
	var h codec.GetEarliestMsgStoretimeRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	return func() {
		ts, err := p.store.GetEarliestMessageTime(h.Topic, h.QueueID)
		if err != nil {
			ts = -1 // the Java store's answer for an empty or unknown queue
		}
		fields := [...]codec.Field{codec.NumField("timestamp", ts)}
		to.Answer(codec.ResponseSuccess, "", fields[:]...)
	}
}
