package broker

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conntest"
)

// FuzzSendToStoredRecord drives a send request — SEND_MESSAGE (10), SEND_MESSAGE_V2 (310)
// or SEND_BATCH_MESSAGE (320), with fuzzed properties, body, sysFlag, reconsume times and
// batch items — through the real send processor (checks, preparation, put into a file store
// on a temporary directory, response) and asserts, issue 14 item 2:
//
//   - whatever is acknowledged re-reads from the CommitLog as a record codec.DecodeRecord
//     accepts (body CRC checked), whose body is the body sent (each item's for a batch) and
//     whose properties pass codec.ValidateProperties and read the same through the Go client;
//   - properties the broker must refuse (malformed beyond a pair with an empty value) are
//     never acknowledged;
//   - a refused send stores nothing.
//
// The topic comes from a small fixed set (a plain topic, a MULTI_TAG one, a retry topic, a
// system topic that sends may not write) rather than from the fuzzer, so that the store does not grow a ConsumeQueue
// per fuzzed name; delayed and transactional sends reach their system topics through the
// properties and the sysFlag. The delay table is hours long and transaction checks are off,
// so nothing but the sends writes to the store while the target runs.
func FuzzSendToStoredRecord(f *testing.F) {
	good := props("TAGS", "TagA", "KEYS", "k1 k2", "UNIQ_KEY", "C0A8000100002A9F0000000000000001")
	var batchBody []byte
	batchBody = codec.AppendBatchItem(batchBody, 1, []byte("b1"), []byte("TAGS\x01x\x02"))
	batchBody = codec.AppendBatchItem(batchBody, 2, []byte("b2"), []byte("\x02\x02\x02"))
	for _, s := range []struct {
		mode, topic uint8
		props       string
		sysFlag     int32
		reconsume   uint8
		body        []byte
		itemProps   string
	}{
		{0, 0, "\x02\x02\x02", 0, 0, []byte("issue 14, SEND_MESSAGE"), ""},
		{1, 0, "\x01\x02\x01\x01\x02\x02TAGS", 0, 0, []byte("issue 14, SEND_MESSAGE_V2"), ""},
		{0, 0, good, 0, 0, []byte("hello"), ""},
		{1, 1, "TAGS\x01a\x02KEYS\x01k", 0, 0, []byte("no final separator"), ""},
		{0, 0, "KEYS\x01\x02TAGS\x01t\x02WAIT\x01true\x02", 0, 0, []byte("java setKeys(empty)"), ""},
		{0, 0, props("DELAY", "3", "TAGS", "t"), 0, 0, []byte("delayed"), ""},
		{1, 0, props("TRAN_MSG", "true", "PGROUP", "PG"), int32(codec.SysFlagTransactionPrepare), 0, []byte("half"), ""},
		{0, 2, props("DELAY", "2"), 0, 16, []byte("to the DLQ"), ""},
		{0, 0, "a\x01b\x01c\x02", 1, 0, []byte("0x01 in a value"), ""},
		{2, 0, "", 0, 0, []byte("b1"), props("TAGS", "x")},
		{2, 1, props("KEYS", "batch"), 0, 0, []byte("b1"), "TAGS\x01x\x02\x02"},
		{3, 0, "", 0, 0, batchBody, ""},
		{3, 0, "", 0, 0, batchBody[:len(batchBody)-5], ""},
	} {
		f.Add(s.mode, s.topic, s.props, s.sysFlag, s.reconsume, s.body, s.itemProps)
	}

	db := startDataBroker(f, dataBrokerOptions{fileStore: true, mutate: func(c *Config) {
		c.MessageDelayLevel = "1h 2h 3h"
		c.CheckTransactionMessage = false
	}})
	createTopic(f, db.b, "FuzzTopic", 1)
	multi := codec.NewTopicConfig("FuzzMulti")
	multi.ReadQueueNums, multi.WriteQueueNums, multi.TopicFilterType = 1, 1, codec.TopicFilterMultiTag
	require.NoError(f, db.b.topics.Update(multi))
	topics := []string{"FuzzTopic", "FuzzMulti", "%RETRY%FuzzGroup", metadata.ScheduleTopic}

	f.Fuzz(func(t *testing.T, mode, topicIndex uint8, properties string, sysFlag int32, reconsume uint8,
		body []byte, itemProperties string) {
		h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: topics[int(topicIndex)%len(topics)],
			DefaultTopic: metadata.AutoCreateTopicKeyTopic, DefaultTopicQueueNums: 1, QueueID: 0, SysFlag: sysFlag,
			BornTimestamp: 1700000000000, Flag: 5, Properties: properties, ReconsumeTimes: int32(reconsume)}
		ext := map[string]string{}
		var cmd *codec.RemotingCommand
		var sent [][]byte // the bodies an acknowledged send must have stored, in order
		refuse := false   // properties the broker must not accept
		if _, err := sendplane.ClientProperties(nil, []byte(properties)); err != nil {
			refuse = true
		}
		switch mode % 4 {
		case 0:
			h.Encode(ext)
			cmd = codec.NewRequest(codec.RequestSendMessage, ext, body)
			sent = [][]byte{body}
		case 1:
			h.EncodeV2(ext)
			cmd = codec.NewRequest(codec.RequestSendMessageV2, ext, body)
			sent = [][]byte{body}
		default:
			h.Batch = true
			h.EncodeV2(ext)
			batch := body
			if mode%4 == 2 { // two items built here, the first with the fuzzed properties
				batch = codec.AppendBatchItem(nil, 1, body, []byte(itemProperties))
				batch = codec.AppendBatchItem(batch, 2, []byte("second"), []byte(properties))
			}
			cmd = codec.NewRequest(codec.RequestSendBatchMessage, ext, batch)
			r := codec.NewBatchReader(batch)
			for {
				item, ok, err := r.Next()
				if err != nil || !ok {
					break
				}
				sent = append(sent, item.Body)
				if _, err := sendplane.ClientProperties(nil, item.Properties); err != nil {
					refuse = true
				}
			}
		}
		cmd.Opaque = 1

		before := db.b.store.MaxPhyOffset()
		conn := &conntest.Conn{}
		db.b.send.ProcessSendMessage(db.b.newRequestContext(conn, cmd))
		resps := conn.MustResponses(t)
		require.Len(t, resps, 1, "one answer, at once (ASYNC_FLUSH)")
		resp := resps[0]
		if resp.Code != int32(codec.ResponseSuccess) {
			require.Equal(t, before, db.b.store.MaxPhyOffset(), "refused (%d %q) but stored", resp.Code, resp.Remark)
			return
		}
		require.False(t, refuse, "malformed properties acknowledged: %q / %q", properties, itemProperties)
		var rh codec.SendMessageResponseHeader
		require.NoError(t, rh.Decode(resp.ExtFields))
		ids := strings.Split(rh.MsgID, ",")
		require.Len(t, ids, len(sent), "msgId %q", rh.MsgID)
		for i, id := range ids {
			_, off, err := codec.DecodeOffsetMsgID(id)
			require.NoError(t, err)
			raw, release, err := db.b.store.LookMessageByOffset(off)
			require.NoError(t, err, "acknowledged record %d at %d", i, off)
			rec, err := codec.DecodeRecord(raw, true)
			if err == nil {
				require.Equal(t, off, rec.PhysicalOffset)
				require.True(t, bytes.Equal(sent[i], rec.Body), "item %d body", i)
				err = codec.ValidateProperties(rec.Properties)
				if err == nil {
					var gm primitive.Message
					gm.UnmarshalProperties(rec.Properties)
					require.Equal(t, codec.DecodeProperties(rec.Properties), gm.GetProperties(),
						"Go client reads the stored properties differently")
				}
			}
			release()
			require.NoError(t, err, "stored record %d at %d (sent properties %q, item properties %q)",
				i, off, properties, itemProperties)
		}
		require.Greater(t, db.b.store.MaxPhyOffset(), before)
		require.Equal(t, strconv.Itoa(int(h.QueueID)), resp.ExtFields["queueId"])
	})
}
