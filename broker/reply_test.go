package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
)

const replyTopic = "TestCluster" + metadata.ReplyTopicSuffix

// replyCmd is SEND_REPLY_MESSAGE (324) as the Go client sends a reply built by
// consumer.CreateReplyMessage.
func replyCmd(replyTo, correlationID string, body []byte, v2 bool) *codec.RemotingCommand {
	h := codec.SendMessageRequestHeader{ProducerGroup: "PG-replier", Topic: replyTopic,
		DefaultTopic: metadata.AutoCreateTopicKeyTopic, DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: 1700000000123,
		Flag: 3, Properties: props("MSG_TYPE", "reply", "CORRELATION_ID", correlationID,
			"REPLY_TO_CLIENT", replyTo, "TTL", "3")}
	ext := map[string]string{}
	if v2 {
		h.EncodeV2(ext)
		return codec.NewRequest(codec.RequestSendReplyMessageV2, ext, body)
	}
	h.Encode(ext)
	return codec.NewRequest(codec.RequestSendReplyMessage, ext, body)
}

// answering answers every request the broker sends with code.
func answering(code codec.ResponseCode) func(*codec.RemotingCommand) *codec.RemotingCommand {
	return func(cmd *codec.RemotingCommand) *codec.RemotingCommand {
		return codec.NewResponse(cmd, code, "")
	}
}

func TestReplyIsPushedToTheRequester(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run("v2="+strconv.FormatBool(v2), func(t *testing.T) {
			db := startDataBroker(t, dataBrokerOptions{})
			requester := dialPeer(t, db.addr, answering(codec.ResponseSuccess))
			requester.heartbeatProducer("10.0.0.9@req", "PG-req")
			replier := remotingtest.Dial(t, db.addr)

			resp := replier.Call(replyCmd("10.0.0.9@req", "corr-1", []byte("answer"), v2))
			requireResponse(t, resp, codec.ResponseSuccess, "")
			var h codec.SendMessageResponseHeader
			require.NoError(t, h.Decode(resp.ExtFields))
			require.Equal(t, int32(0), h.QueueID)
			require.Equal(t, int64(0), h.QueueOffset)
			require.Equal(t, "DefaultRegion", h.MsgRegion)

			// Stored as sent.
			rec := viewRecord(t, replier, offsetOf(t, h.MsgID))
			require.Equal(t, replyTopic, string(rec.Topic))
			require.Equal(t, "answer", string(rec.Body))
			require.Equal(t, map[string]string{"MSG_TYPE": "reply", "CORRELATION_ID": "corr-1",
				"REPLY_TO_CLIENT": "10.0.0.9@req", "TTL": "3"}, codec.DecodeProperties(rec.Properties))

			pushes := requester.requests(codec.RequestPushReplyMessageToClient)
			require.Len(t, pushes, 1)
			push := pushes[0]
			require.False(t, push.IsOneway())
			require.Equal(t, "answer", string(push.Body))
			ext := push.ExtFields
			require.Equal(t, replyTopic, ext["topic"])
			require.Equal(t, "PG-replier", ext["producerGroup"])
			require.Equal(t, "0", ext["queueId"])
			require.Equal(t, "3", ext["flag"])
			require.Equal(t, "1700000000123", ext["bornTimestamp"])
			require.Equal(t, db.b.BrokerAddr(), ext["storeHost"])
			require.Equal(t, replier.NetConn().LocalAddr().String(), ext["bornHost"])
			storeTs, err := strconv.ParseInt(ext["storeTimestamp"], 10, 64)
			require.NoError(t, err)
			require.InDelta(t, time.Now().UnixMilli(), storeTs, 10_000)
			p := codec.DecodeProperties([]byte(ext["properties"]))
			require.Equal(t, "corr-1", p["CORRELATION_ID"])
			require.Equal(t, ext["storeTimestamp"], p["PUSH_REPLY_TIME"])
		})
	}
}

func TestReplyFailures(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	refusing := dialPeer(t, db.addr, answering(codec.ResponseSystemError))
	refusing.heartbeatProducer("10.0.0.9@refuses", "PG-req")
	replier := remotingtest.Dial(t, db.addr)

	// Nobody with that client id: stored, not pushed.
	resp := replier.Call(replyCmd("10.0.0.9@gone", "c1", []byte("lost"), false))
	requireResponse(t, resp, codec.ResponseSystemError, "push reply message fail, channel of <10.0.0.9@gone> not found.")
	require.Equal(t, "lost", string(viewRecord(t, replier, offsetOf(t, resp.ExtFields["msgId"])).Body))

	// The requester refuses the push.
	resp = replier.Call(replyCmd("10.0.0.9@refuses", "c2", []byte("refused"), false))
	requireResponse(t, resp, codec.ResponseSystemError, "push reply message to 10.0.0.9@refusesfail.")
	require.Len(t, refusing.requests(codec.RequestPushReplyMessageToClient), 1)

	// No REPLY_TO_CLIENT.
	cmd := replyCmd("x", "c3", []byte("b"), false)
	cmd.ExtFields["properties"] = props("CORRELATION_ID", "c3")
	requireResponse(t, replier.Call(cmd), codec.ResponseSystemError, "reply message properties[REPLY_TO_CLIENT] is null")

	// The send checks apply.
	cmd = replyCmd("x", "c4", []byte("b"), false)
	cmd.ExtFields["topic"] = metadata.ScheduleTopic
	requireResponse(t, replier.Call(cmd), codec.ResponseNoPermission, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.")
	cmd = replyCmd("x", "c5", []byte("b"), false)
	delete(cmd.ExtFields, "bornTimestamp")
	requireResponse(t, replier.Call(cmd), codec.ResponseSystemError, "the custom field <bornTimestamp> is null")
}

// The Go client's consumer.CreateReplyMessage puts the body into the properties and sends
// no body: the Java broker cannot store that but pushes it all the same, answering msgId "0".
func TestReplyWithoutBodyIsPushedNotStored(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	requester := dialPeer(t, db.addr, answering(codec.ResponseSuccess))
	requester.heartbeatProducer("10.0.0.9@req", "PG-req")
	replier := remotingtest.Dial(t, db.addr)
	max0 := db.b.store.MaxPhyOffset()
	resp := replier.Call(replyCmd("10.0.0.9@req", "c", nil, false))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, "0", resp.ExtFields["msgId"])
	require.Len(t, requester.requests(codec.RequestPushReplyMessageToClient), 1)
	require.Equal(t, max0, db.b.store.MaxPhyOffset(), "nothing stored")
}
