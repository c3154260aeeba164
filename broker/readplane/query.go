package readplane

import (
	"strconv"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// Query by key and view by id (PROTOCOL.md §3.4, §6.3), on the query pool: walking an
// IndexFile slot chain and reading the records it points at may fault pages in from disk.
//
//	QUERY_MESSAGE 12       topic, key, maxNum, beginTimestamp, endTimestamp; with
//	                       _UNIQUE_KEY_QUERY=true the key is a UNIQ_KEY and maxNum becomes
//	                       defaultQueryMaxNum. Body: the matching records back to back;
//	                       none → QUERY_NOT_FOUND (22). The header always carries
//	                       indexLastUpdateTimestamp and indexLastUpdatePhyoffset.
//	VIEW_MESSAGE_BY_ID 33  offset (a CommitLog offset from an offsetMsgId). Body: that one
//	                       record; none → SYSTEM_ERROR (1), as the Java broker answers.
//
// The IndexFile stores 4-byte hashes of "topic#key", so different keys (or topics) can
// share a slot chain: each record found is checked against the request — its topic, and
// its UNIQ_KEY or one of its space-separated KEYS equal to the key — before it is sent.
// Bodies are the store's mapped slices, written with one vectored write and released
// when netio is done with them.

// remarkQueryNotFound is the Java broker's QUERY_NOT_FOUND remark.
const remarkQueryNotFound = "can not find message, maybe time range not correct"

// ProcessQueryMessage serves QUERY_MESSAGE (12): it decodes on the event loop and returns
// the query for the query pool.
func (p *Plane) ProcessQueryMessage(rc *remoting.Request) (rest func()) {
	to := rc.Reply
	var h codec.QueryMessageRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	maxNum := int(h.MaxNum)
	if h.UniqueKeyQuery {
		maxNum = p.set.DefaultQueryMaxNum
	}
	return func() { p.queryMessage(to, &h, maxNum) }
}

// queryCandidates is how many index hits a query asks the store for (the store caps it at
// maxMsgsNumBatch, 64 by default): hits that fail recordMatchesQuery — a UNIQ_KEY equal to
// the key, a hash collision — must not use up a small maxNum before the real matches.
const queryCandidates = 64

func (p *Plane) queryMessage(to remoting.Reply, h *codec.QueryMessageRequestHeader, maxNum int) {
	candidates := maxNum
	if maxNum > 0 {
		candidates = max(maxNum, queryCandidates)
	}
	res, err := p.store.QueryMessage(h.Topic, h.Key, candidates, h.BeginTimestamp, h.EndTimestamp)
	if err != nil {
		to.Answer(codec.ResponseSystemError, "query message failed: "+err.Error())
		return
	}
	fields := [...]codec.Field{
		codec.NumField("indexLastUpdatePhyoffset", res.IndexLastUpdatePhyOffset),
		codec.NumField("indexLastUpdateTimestamp", res.IndexLastUpdateTimestamp),
	}
	f := to.NewFrame()
	for _, rec := range res.Buffers {
		if maxNum > 0 && len(f.Bodies) == maxNum {
			break
		}
		if recordMatchesQuery(rec, h.Topic, h.Key, h.UniqueKeyQuery) {
			f.Bodies = append(f.Bodies, rec)
		}
	}
	if len(f.Bodies) == 0 {
		res.Release()
		to.Frame(f, codec.ResponseQueryNotFound, remarkQueryNotFound, fields[:], nil)
		return
	}
	f.Query = res
	to.Frame(f, codec.ResponseSuccess, "", fields[:], f.Bodies)
}

// recordMatchesQuery reports whether a record found through the index really is one the
// query asked for (the index may collide).
func recordMatchesQuery(rec []byte, topic, key string, unique bool) bool {
	r, err := codec.DecodeRecord(rec, false)
	if err != nil || string(r.Topic) != topic {
		return false
	}
	p := codec.ScanRecordProperties(r.Properties) // as the store read them into the index
	if unique {
		return len(p.UniqKey) > 0 && string(p.UniqKey) == key
	}
	return len(p.Keys) > 0 && p.HasKey(key)
}

// ProcessViewMessageByID serves VIEW_MESSAGE_BY_ID (33): it decodes on the event loop and
// returns the record read for the query pool.
func (p *Plane) ProcessViewMessageByID(rc *remoting.Request) (rest func()) {
	to := rc.Reply
	var h codec.ViewMessageByIDRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	offset := h.Offset
	return func() {
		rec, release, err := p.store.LookMessageByOffset(offset)
		if err != nil {
			to.Answer(codec.ResponseSystemError,
				"can not find message by the offset, "+strconv.FormatInt(offset, 10))
			return
		}
		f := to.NewFrame()
		f.Release = release
		f.Bodies = append(f.Bodies, rec)
		to.Frame(f, codec.ResponseSuccess, "", nil, f.Bodies)
	}
}
