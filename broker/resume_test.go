package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

func resumeCmd(msgID string) *codec.RemotingCommand {
	ext := map[string]string{}
	(&codec.ResumeCheckHalfMessageRequestHeader{MsgID: msgID}).Encode(ext)
	return codec.NewRequest(codec.RequestResumeCheckHalfMessage, ext, nil)
}

// RESUME_CHECK_HALF_MESSAGE: a half the checker gave up on (moved to TRANS_CHECK_MAX_TIME_TOPIC
// after transactionCheckMax checks) is put back into the half queue with its count at 0, is
// checked again, and its producer's commit delivers it once.
func TestResumeCheckHalfMessageChecksAgain(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, func(c *Config) {
		c.CheckTransactionMessage = false
		c.TransactionCheckMax = 1
	})
	c := dialPeer(t, db.addr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	sendHalf(t, c, "TopicResume", 1, "resume me", "PG", "UR")
	for range 2 {
		clock.Advance(db.b.cfg.TransactionTimeOut)
		db.b.send.CheckTransactions()
	}
	testutil.Eventually(t, "one CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 1 })
	kept := queueRecords(t, db.b.store, metadata.TransCheckMaxTimeTopic, 0)
	require.Len(t, kept, 1, "given up after one check")
	halvesBefore := len(queueRecords(t, db.b.store, metadata.TransHalfTopic, 0))

	requireResponse(t, c.call(resumeCmd(codec.OffsetMsgID(db.b.storeHost, kept[0].PhysicalOffset))), codec.ResponseSuccess, "")
	halves := queueRecords(t, db.b.store, metadata.TransHalfTopic, 0)
	require.Len(t, halves, halvesBefore+1)
	resumed := halves[len(halves)-1]
	p := codec.DecodeProperties(resumed.Properties)
	require.Equal(t, "0", p["TRANSACTION_CHECK_TIMES"])
	require.NotContains(t, p, "TRAN_PREPARED_QUEUE_OFFSET", "a chain of its own")
	require.Equal(t, "TopicResume", p["REAL_TOPIC"])
	require.Equal(t, "1", p["REAL_QID"])
	require.Equal(t, "PG", p["PGROUP"])
	require.Equal(t, "resume me", string(resumed.Body))
	require.Equal(t, kept[0].BornTimestamp, resumed.BornTimestamp)

	// Checked again once older than transactionTimeOut; the producer commits from the check.
	clock.Advance(db.b.cfg.TransactionTimeOut)
	db.b.send.CheckTransactions()
	testutil.Eventually(t, "a second CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 2 })
	ch := checkHeader(t, c.requests(codec.RequestCheckTransactionState)[1])
	require.Equal(t, "TopicResume", ch.Topic)
	requireResponse(t, c.call(endTxCmd("PG", ch.TranStateTableOffset, ch.CommitLogOffset, "UR",
		codec.SysFlagTransactionCommit, true)), codec.ResponseSuccess, "")
	recs := queueRecords(t, db.b.store, "TopicResume", 1)
	require.Len(t, recs, 1, "committed once")
	require.Equal(t, "resume me", string(recs[0].Body))
}

func TestResumeCheckHalfMessageRefusals(t *testing.T) {
	db := startClockBroker(t, testutil.NewManualClock().Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	resp := c.call(sendV1("TopicPlain", 0, []byte("plain"), props("KEYS", "k")))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	var sent codec.SendMessageResponseHeader
	require.NoError(t, sent.Decode(resp.ExtFields))

	requireResponse(t, c.call(resumeCmd(sent.MsgID)), codec.ResponseSystemError,
		"Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed. The message "+sent.MsgID+
			" of topic TopicPlain is not a transaction half message (it has no REAL_TOPIC).")
	resp = c.call(resumeCmd("nonsense"))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, `Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC. The custom field <msgId> "nonsense" is not an offset message id`)
	resp = c.call(resumeCmd(codec.OffsetMsgID(db.b.storeHost, 1<<30)))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC. No message found by msgId")
	require.Empty(t, queueRecords(t, db.b.store, metadata.TransHalfTopic, 0), "nothing was put")
}

// A slave refuses: its store only takes the master's bytes.
func TestResumeCheckHalfMessageRefusedBySlave(t *testing.T) {
	db := startClockBroker(t, testutil.NewManualClock().Now, func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
	})
	c := dialPeer(t, db.addr, nil)
	requireResponse(t, c.call(resumeCmd(codec.OffsetMsgID(db.b.storeHost, 0))), codec.ResponseSystemError,
		"Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed. The broker is a slave.")
}
