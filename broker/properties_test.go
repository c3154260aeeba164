package broker

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/store"
)

// Malformed properties (issue 14 item 2): the two reproductions from the issue, over the
// remoting protocol, against the in-memory and the file store. Both must be refused with
// MESSAGE_ILLEGAL naming what is wrong, and nothing may be stored.
func TestSendMalformedPropertiesRefused(t *testing.T) {
	cases := []struct {
		name   string
		cmd    *codec.RemotingCommand
		remark string
	}{
		{"SEND_MESSAGE properties=\\x02\\x02\\x02",
			sendV1("TopicP", 0, []byte("body"), "\x02\x02\x02"),
			"the properties are malformed: codec: properties: piece 1 at byte 0 is empty (the properties start with 0x02)"},
		{"SEND_MESSAGE_V2 i=\\x01\\x02\\x01\\x01\\x02\\x02TAGS",
			sendV2("TopicP", 0, []byte("body"), "\x01\x02\x01\x01\x02\x02TAGS"),
			"the properties are malformed: codec: properties: piece 1 at byte 0 has no name"},
	}
	for _, fileStore := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name + "/memstore"
			if fileStore {
				name = tc.name + "/filestore"
			}
			t.Run(name, func(t *testing.T) {
				db := startDataBroker(t, dataBrokerOptions{fileStore: fileStore})
				c := remotingtest.Dial(t, db.addr)
				sendOK(t, c, sendV1("TopicP", 0, []byte("first"), props("TAGS", "a")))
				before := db.b.store.MaxPhyOffset()

				resp := c.Call(tc.cmd)
				require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code, "remark: %s", resp.Remark)
				require.Equal(t, tc.remark, resp.Remark)
				require.Equal(t, before, db.b.store.MaxPhyOffset(), "nothing stored")

				// The connection stays usable and the next good send follows the first.
				h := sendOK(t, c, sendV2("TopicP", 0, []byte("next"), props("TAGS", "b")))
				require.Equal(t, int64(1), h.QueueOffset)
			})
		}
	}
}

// A batch is refused whole when its header's properties or one item's are malformed.
func TestSendBatchMalformedPropertiesRefused(t *testing.T) {
	for _, fileStore := range []bool{false, true} {
		t.Run(map[bool]string{false: "memstore", true: "filestore"}[fileStore], func(t *testing.T) {
			db := startDataBroker(t, dataBrokerOptions{fileStore: fileStore})
			c := remotingtest.Dial(t, db.addr)
			sendOK(t, c, sendBatch("TopicPB", 0, [2]string{"first", props("TAGS", "a")}))
			before := db.b.store.MaxPhyOffset()

			resp := c.Call(sendBatch("TopicPB", 0,
				[2]string{"b1", props("TAGS", "x")}, [2]string{"b2", "\x02\x02\x02"}, [2]string{"b3", ""}))
			requireResponse(t, resp, codec.ResponseMessageIllegal, "the properties of batch item 2 are malformed: "+
				"codec: properties: piece 1 at byte 0 is empty (the properties start with 0x02)")
			resp = c.Call(sendBatch("TopicPB", 0, [2]string{"b1", "TAGS\x01x\x02k\x01v\x01w"}))
			requireResponse(t, resp, codec.ResponseMessageIllegal, "the properties of batch item 1 are malformed: "+
				`codec: properties: piece 2 at byte 7 (name "k") has a 0x01 in its value at byte 10`)

			cmd := sendBatch("TopicPB", 0, [2]string{"b1", props("TAGS", "x")})
			cmd.ExtFields["i"] = "\x01\x02\x01\x01\x02\x02TAGS"
			resp = c.Call(cmd)
			requireResponse(t, resp, codec.ResponseMessageIllegal,
				"the properties are malformed: codec: properties: piece 1 at byte 0 has no name")
			require.Equal(t, before, db.b.store.MaxPhyOffset(), "nothing stored")

			h := sendOK(t, c, sendBatch("TopicPB", 0, [2]string{"next", ""}))
			require.Equal(t, int64(1), h.QueueOffset)
		})
	}
}

// Java clients send a name with an empty value (Message.setKeys with an empty collection
// sends "KEYS 0x01 0x02"; setTags("") "TAGS 0x01 0x02"). Apache RocketMQ drops such pairs
// when it re-encodes the message; so does ringmq, in single sends, batches and replies.
func TestSendEmptyValuesDropped(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicE", 0, []byte("java"), "KEYS\x01\x02TAGS\x01t\x02WAIT\x01true\x02"))
	rec := viewRecord(t, c, offsetOf(t, h.MsgID))
	require.NoError(t, codec.ValidateProperties(rec.Properties))
	require.NotContains(t, string(rec.Properties), "KEYS")
	p := codec.DecodeProperties(rec.Properties)
	require.Equal(t, "t", p["TAGS"])
	require.Equal(t, "TestCluster", p["CLUSTER"])
	require.Len(t, p, 3, "TAGS, UNIQ_KEY, CLUSTER: %q", rec.Properties)

	cmd := sendBatch("TopicE", 0, [2]string{"b1", "KEYS\x01\x02TAGS\x01x"}, [2]string{"b2", "TAGS\x01"})
	cmd.ExtFields["i"] = "KEYS\x01"
	h = sendOK(t, c, cmd)
	ids := strings.Split(h.MsgID, ",")
	require.Len(t, ids, 2)
	for i, want := range []map[string]string{{"TAGS": "x", "CLUSTER": "TestCluster"}, {"CLUSTER": "TestCluster"}} {
		rec := viewRecord(t, c, offsetOf(t, ids[i]))
		require.NoError(t, codec.ValidateProperties(rec.Properties))
		require.Equal(t, want, codec.DecodeProperties(rec.Properties))
	}

	// An empty value does not excuse another defect: the remark names the client's bytes.
	resp := c.Call(sendV2("TopicE", 0, []byte("x"), "KEYS\x01\x02TAGS"))
	requireResponse(t, resp, codec.ResponseMessageIllegal,
		"the properties are malformed: codec: properties: piece 2 at byte 6 has no 0x01 between name and value")
}

func TestReplyMalformedPropertiesRefused(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	requester := dialPeer(t, db.addr, answering(codec.ResponseSuccess))
	requester.heartbeatProducer("10.0.0.9@req", "PG-req")
	replier := remotingtest.Dial(t, db.addr)
	before := db.b.store.MaxPhyOffset()

	cmd := replyCmd("10.0.0.9@req", "c1", []byte("answer"), true)
	cmd.ExtFields["i"] = props("REPLY_TO_CLIENT", "10.0.0.9@req", "CORRELATION_ID", "c1") + "\x02"
	resp := replier.Call(cmd)
	requireResponse(t, resp, codec.ResponseMessageIllegal,
		"the properties are malformed: codec: properties: piece 3 at byte 47 is empty (two 0x02 in a row)")
	require.Equal(t, before, db.b.store.MaxPhyOffset(), "nothing stored")
	require.Empty(t, requester.requests(codec.RequestPushReplyMessageToClient), "nothing pushed")

	// Empty values are dropped, from the stored reply and from the push.
	cmd = replyCmd("10.0.0.9@req", "c2", []byte("answer"), false)
	cmd.ExtFields["properties"] = "TTL\x01\x02" + props("REPLY_TO_CLIENT", "10.0.0.9@req", "CORRELATION_ID", "c2")
	resp = replier.Call(cmd)
	requireResponse(t, resp, codec.ResponseSuccess, "")
	rec := viewRecord(t, replier, offsetOf(t, resp.ExtFields["msgId"]))
	require.Equal(t, map[string]string{"REPLY_TO_CLIENT": "10.0.0.9@req", "CORRELATION_ID": "c2"},
		codec.DecodeProperties(rec.Properties))
	require.NoError(t, codec.ValidateProperties(rec.Properties))
	pushes := requester.requests(codec.RequestPushReplyMessageToClient)
	require.Len(t, pushes, 1)
	require.NoError(t, codec.ValidateProperties([]byte(pushes[0].ExtFields["properties"])))
	require.NotContains(t, pushes[0].ExtFields["properties"], "TTL")
}

// legacyStore serves, at one CommitLog offset, a record an older broker (or another one)
// could have stored: properties that do not parse. A put can no longer write one.
type legacyStore struct {
	store.MessageStore
	mu     sync.Mutex
	offset int64
	rec    []byte
}

func (s *legacyStore) serve(offset int64, m codec.Message) {
	m.PhysicalOffset = offset
	rec, err := m.AppendRecord(nil) // the codec encodes any properties; only the store checks
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.offset, s.rec = offset, rec
	s.mu.Unlock()
}

func (s *legacyStore) LookMessageByOffset(off int64) ([]byte, func(), error) {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec != nil && off == s.offset {
		return rec, func() {}, nil
	}
	return s.MessageStore.LookMessageByOffset(off)
}

// scheduleBornHost is the born host of the records the tests serve as stored ones.
var scheduleBornHost = netip.MustParseAddrPort("10.0.0.7:5555")

// legacyProperties has every defect, between two good pairs and a DELAY the re-encoding drops.
const legacyProperties = "\x02KEYS\x01k\x02\x01noname\x02EMPTY\x01\x02junk\x02\x02TAGS\x01t\x01u\x02DELAY\x013\x02UNIQ_KEY\x01U1"

// The re-encoding paths (send-back, transaction commit, delay delivery: broker/delay) start
// from a stored record: what they store must be well formed even when that record is not.
func TestSendBackOfALegacyRecordIsCanonical(t *testing.T) {
	var legacy *legacyStore
	db := startDataBroker(t, dataBrokerOptions{wrap: func(s store.MessageStore) store.MessageStore {
		legacy = &legacyStore{MessageStore: s}
		return legacy
	}})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicL", 0, []byte("real"), ""))
	off := offsetOf(t, h.MsgID)
	legacy.serve(off, codec.Message{Topic: "TopicL", Body: []byte("legacy"), BornHost: scheduleBornHost,
		StoreHost: db.b.storeHost, Properties: []byte(legacyProperties)})

	requireResponse(t, c.Call(sendBackCmd(off, "GL", 0, nil)), codec.ResponseSuccess, "")
	r := onlyRecord(t, db, metadata.ScheduleTopic, 2)
	require.Equal(t, "legacy", string(r.Body))
	require.NoError(t, codec.ValidateProperties(r.Properties))
	require.Equal(t, map[string]string{"KEYS": "k", "UNIQ_KEY": "U1", "RETRY_TOPIC": "TopicL",
		"ORIGIN_MESSAGE_ID": h.MsgID, "WAIT": "false", "DELAY": "3", "REAL_TOPIC": "%RETRY%GL", "REAL_QID": "0"},
		codec.DecodeProperties(r.Properties))

	// What even the re-encoding cannot make well formed — a topic with a 0x01, which becomes
	// RETRY_TOPIC — the store refuses, and the remark says why.
	legacy.serve(off, codec.Message{Topic: "Topic\x01L", Body: []byte("legacy"), BornHost: scheduleBornHost,
		StoreHost: db.b.storeHost})
	before := db.b.store.MaxPhyOffset()
	requireResponse(t, c.Call(sendBackCmd(off, "GL", 0, nil)), codec.ResponseMessageIllegal,
		`the properties are malformed: codec: properties: piece 1 at byte 0 (name "RETRY_TOPIC") has a 0x01 in its value at byte 17`)
	require.Equal(t, before, db.b.store.MaxPhyOffset())
}
