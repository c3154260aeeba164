package broker

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// END_TRANSACTION and the check service over the wire, on a MemStore broker whose clock the
// test moves (the check service's runs are called by the test: no timer decides anything).

// startClockBroker is startDataBroker with a clock shared by the broker and its MemStore.
func startClockBroker(t testing.TB, clock func() time.Time, mutate func(*Config)) *dataBroker {
	t.Helper()
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	port, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)
	cfg.ListenPort, cfg.HAListenPort = port, pickPort(t, port)
	if mutate != nil {
		mutate(&cfg)
	}
	sc := store.DefaultConfig(cfg.StorePathRootDir)
	sc.StoreHost = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.ListenPort))
	sc.MaxMessageSize = cfg.MaxMessageSize
	sc.Slave = cfg.IsSlave() // as storeConfig sets it: a slave's store takes replicated bytes
	mem := storetest.NewMemStore(sc, clock)
	b, err := New(cfg, Deps{Logger: testLogger(t), Store: mem, Clock: clock})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	return &dataBroker{b: b, addr: b.Addr(), mem: mem}
}

// peerClient is a client connection that records the requests the broker sends it
// (CHECK_TRANSACTION_STATE, PUSH_REPLY_MESSAGE_TO_CLIENT) and answers them with answer.
type peerClient struct {
	t      testing.TB
	addr   string
	cl     *netio.Client
	answer func(cmd *codec.RemotingCommand) *codec.RemotingCommand // nil result: no answer

	mu       sync.Mutex
	received []*codec.RemotingCommand
}

func dialPeer(t testing.TB, addr string, answer func(*codec.RemotingCommand) *codec.RemotingCommand) *peerClient {
	t.Helper()
	c := &peerClient{t: t, addr: addr, answer: answer}
	cfg := netio.DefaultClientConfig()
	cfg.Handler = c
	cl, err := netio.NewClient(cfg, logtest.Discard())
	require.NoError(t, err)
	c.cl = cl
	t.Cleanup(func() { _ = cl.Close() })
	return c
}

func (c *peerClient) OnOpen(netio.Conn)         {}
func (c *peerClient) OnClose(netio.Conn, error) {}
func (c *peerClient) OnRequest(conn netio.Conn, cmd *codec.RemotingCommand) {
	owned := *cmd
	owned.Body = append([]byte(nil), cmd.Body...)
	owned.ExtFields = maps.Clone(cmd.ExtFields)
	c.mu.Lock()
	c.received = append(c.received, &owned)
	c.mu.Unlock()
	if c.answer != nil {
		if resp := c.answer(&owned); resp != nil {
			_ = conn.WriteCommand(resp)
		}
	}
}

// requests returns the requests of this code received so far.
func (c *peerClient) requests(code codec.RequestCode) []*codec.RemotingCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*codec.RemotingCommand
	for _, cmd := range c.received {
		if cmd.Code == int32(code) {
			out = append(out, cmd)
		}
	}
	return out
}

func (c *peerClient) call(cmd *codec.RemotingCommand) *codec.RemotingCommand {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.cl.Invoke(ctx, c.addr, cmd)
	require.NoError(c.t, err)
	return resp
}

// heartbeatProducer registers clientID as a producer of group.
func (c *peerClient) heartbeatProducer(clientID, group string) {
	c.t.Helper()
	body, err := (&codec.HeartbeatData{ClientID: clientID,
		ProducerDataSet: []codec.ProducerData{{GroupName: group}}}).Encode()
	require.NoError(c.t, err)
	requireResponse(c.t, c.call(codec.NewRequest(codec.RequestHeartBeat, nil, body)), codec.ResponseSuccess, "")
}

// sendHalfCmd is a transactional SEND_MESSAGE as the Go transaction producer sends it.
func sendHalfCmd(topic string, queueID int32, body, group, uniq string, extra ...string) *codec.RemotingCommand {
	kv := append([]string{"TRAN_MSG", "true", "PGROUP", group, "UNIQ_KEY", uniq, "KEYS", "key-" + uniq}, extra...)
	cmd := sendV1(topic, queueID, []byte(body), props(kv...))
	cmd.ExtFields["producerGroup"] = group
	cmd.ExtFields["sysFlag"] = strconv.Itoa(int(codec.SysFlagTransactionPrepare))
	return cmd
}

func sendHalf(t testing.TB, c *peerClient, topic string, queueID int32, body, group, uniq string, extra ...string) codec.SendMessageResponseHeader {
	t.Helper()
	resp := c.call(sendHalfCmd(topic, queueID, body, group, uniq, extra...))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	var h codec.SendMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields))
	return h
}

// endTxCmd is END_TRANSACTION for the half a send (or a check) named.
func endTxCmd(group string, tranStateTableOffset, commitLogOffset int64, uniq string, state int32, fromCheck bool) *codec.RemotingCommand {
	ext := map[string]string{}
	(&codec.EndTransactionRequestHeader{ProducerGroup: group, TranStateTableOffset: tranStateTableOffset,
		CommitLogOffset: commitLogOffset, CommitOrRollback: state, FromTransactionCheck: fromCheck, MsgID: uniq,
		TransactionID: uniq}).Encode(ext)
	return codec.NewRequest(codec.RequestEndTransaction, ext, nil)
}

func endTx(t testing.TB, c *peerClient, group string, h codec.SendMessageResponseHeader, state int32) {
	t.Helper()
	resp := c.call(endTxCmd(group, h.QueueOffset, offsetOf(t, h.MsgID), h.TransactionID, state, false))
	requireResponse(t, resp, codec.ResponseSuccess, "")
}

// queueRecords reads every record of a queue.
func queueRecords(t testing.TB, st store.MessageStore, topic string, queueID int32) []codec.Record {
	t.Helper()
	res, err := st.GetMessage("", topic, queueID, 0, 1000, 0, nil)
	require.NoError(t, err)
	defer res.Release()
	var out []codec.Record
	for _, b := range res.Buffers {
		r, err := codec.DecodeRecord(b, true)
		require.NoError(t, err)
		r.Body = append([]byte(nil), r.Body...)
		r.Properties = append([]byte(nil), r.Properties...)
		r.Topic = append([]byte(nil), r.Topic...)
		out = append(out, r)
	}
	return out
}

func opBodies(t testing.TB, st store.MessageStore) []string {
	t.Helper()
	var out []string
	for _, r := range queueRecords(t, st, metadata.TransOpHalfTopic, 0) {
		require.Equal(t, "d", codec.DecodeProperties(r.Properties)["TAGS"])
		out = append(out, string(r.Body))
	}
	return out
}

func noChecks(c *Config) { c.CheckTransactionMessage = false }

func TestEndTransactionCommitDeliversOnce(t *testing.T) {
	db := startClockBroker(t, time.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	h := sendHalf(t, c, "TopicTx", 2, "payload", "PG", "UNIQ-1")
	require.Equal(t, "UNIQ-1", h.TransactionID)
	require.Zero(t, db.b.store.GetMaxOffsetInQueue("TopicTx", 2), "a half is not visible")
	halfPhys := offsetOf(t, h.MsgID)

	endTx(t, c, "PG", h, codec.SysFlagTransactionCommit)
	recs := queueRecords(t, db.b.store, "TopicTx", 2)
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, "payload", string(r.Body))
	require.Equal(t, codec.SysFlagTransactionCommit, codec.TransactionType(r.SysFlag))
	require.Equal(t, halfPhys, r.PreparedTransactionOffset)
	require.Equal(t, int64(1700000000000), r.BornTimestamp)
	require.Equal(t, map[string]string{"PGROUP": "PG", "UNIQ_KEY": "UNIQ-1", "KEYS": "key-UNIQ-1",
		"CLUSTER": "TestCluster", "__transactionId__": "UNIQ-1", "WAIT": "false"}, codec.DecodeProperties(r.Properties))
	require.Equal(t, []string{"0,"}, opBodies(t, db.b.store))

	// A second commit, a late rollback: nothing more happens.
	endTx(t, c, "PG", h, codec.SysFlagTransactionCommit)
	endTx(t, c, "PG", h, codec.SysFlagTransactionRollback)
	require.Len(t, queueRecords(t, db.b.store, "TopicTx", 2), 1)
	require.Equal(t, []string{"0,"}, opBodies(t, db.b.store))
	db.b.send.CheckTransactions()
	require.Equal(t, int64(1), db.b.offsets.Query(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0))
	require.Equal(t, int64(1), db.b.offsets.Query(metadata.SysTransCheckGroup, metadata.TransOpHalfTopic, 0))
}

func TestEndTransactionRollbackAndUnknown(t *testing.T) {
	db := startClockBroker(t, time.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	h1 := sendHalf(t, c, "TopicTx", 0, "rolled back", "PG", "U1")
	h2 := sendHalf(t, c, "TopicTx", 0, "unknown", "PG", "U2")
	endTx(t, c, "PG", h1, codec.SysFlagTransactionRollback)
	endTx(t, c, "PG", h2, codec.SysFlagTransactionNot)
	require.Zero(t, db.b.store.GetMaxOffsetInQueue("TopicTx", 0))
	require.Equal(t, []string{"0,"}, opBodies(t, db.b.store), "only the rollback is recorded")
	db.b.send.CheckTransactions()
	require.Equal(t, int64(1), db.b.offsets.Query(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0), "the unknown one stays pending")

	// A committed half with DELAY goes through the schedule queue.
	h3 := sendHalf(t, c, "TopicTx", 0, "later", "PG", "U3", "DELAY", "2")
	endTx(t, c, "PG", h3, codec.SysFlagTransactionCommit)
	recs := queueRecords(t, db.b.store, metadata.ScheduleTopic, 1)
	require.Len(t, recs, 1)
	p := codec.DecodeProperties(recs[0].Properties)
	require.Equal(t, "TopicTx", p["REAL_TOPIC"])
	require.Equal(t, "0", p["REAL_QID"])
	require.Equal(t, "2", p["DELAY"])
	require.Equal(t, codec.SysFlagTransactionCommit, codec.TransactionType(recs[0].SysFlag))
}

func TestEndTransactionRejectsWhatIsNotItsHalf(t *testing.T) {
	db := startClockBroker(t, time.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	h := sendHalf(t, c, "TopicTx", 0, "x", "PG", "U1")
	phys := offsetOf(t, h.MsgID)
	commit := codec.SysFlagTransactionCommit

	requireResponse(t, c.call(endTxCmd("OtherPG", h.QueueOffset, phys, "U1", commit, false)),
		codec.ResponseSystemError, "The producer group wrong")
	requireResponse(t, c.call(endTxCmd("PG", h.QueueOffset+1, phys, "U1", commit, false)),
		codec.ResponseSystemError, "The transaction state table offset wrong")
	requireResponse(t, c.call(endTxCmd("PG", h.QueueOffset, 999999, "U1", commit, false)),
		codec.ResponseSystemError, "Find prepared transaction message failed")
	normal := c.call(sendV1("TopicTx", 0, []byte("plain"), props("PGROUP", "PG")))
	require.Equal(t, int32(codec.ResponseSuccess), normal.Code)
	requireResponse(t, c.call(endTxCmd("PG", 0, offsetOf(t, normal.ExtFields["msgId"]), "U1", commit, false)),
		codec.ResponseSystemError, "Find prepared transaction message failed")
	requireResponse(t, c.call(endTxCmd("PG", h.QueueOffset, phys, "U1", 4, false)),
		codec.ResponseSystemError, `the custom field <commitOrRollback> has a bad value: "4"`)
	cmd := endTxCmd("PG", h.QueueOffset, phys, "U1", commit, false)
	delete(cmd.ExtFields, "msgId")
	requireResponse(t, c.call(cmd), codec.ResponseSystemError, "the custom field <msgId> is null")
	require.Equal(t, int64(1), db.b.store.GetMaxOffsetInQueue("TopicTx", 0), "only the plain message")

	// The connection still works, and the half still commits.
	endTx(t, c, "PG", h, commit)
	require.Equal(t, int64(2), db.b.store.GetMaxOffsetInQueue("TopicTx", 0))
}

// checkHeader decodes a CHECK_TRANSACTION_STATE request.
func checkHeader(t testing.TB, cmd *codec.RemotingCommand) codec.CheckTransactionStateRequestHeader {
	t.Helper()
	require.True(t, cmd.IsOneway(), "checks are oneway")
	var h codec.CheckTransactionStateRequestHeader
	require.NoError(t, h.Decode(cmd.ExtFields))
	return h
}

func TestTransactionCheckBackAndCommitFromCheck(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, noChecks)
	tx := db.b.send
	c := dialPeer(t, db.addr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	h := sendHalf(t, c, "TopicCk", 1, "checked", "PG", "UC")

	clock.Advance(db.b.cfg.TransactionTimeOut - time.Millisecond)
	tx.CheckTransactions()
	require.Empty(t, c.requests(codec.RequestCheckTransactionState), "younger than transactionTimeOut")

	clock.Advance(time.Millisecond)
	tx.CheckTransactions()
	testutil.Eventually(t, "one CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 1 })
	check := c.requests(codec.RequestCheckTransactionState)[0]
	ch := checkHeader(t, check)
	halves := queueRecords(t, db.b.store, metadata.TransHalfTopic, 0)
	require.Len(t, halves, 2, "the checked half was appended again")
	cp := halves[1]
	require.Equal(t, "1", codec.DecodeProperties(cp.Properties)["TRANSACTION_CHECK_TIMES"])
	require.Equal(t, "0", codec.DecodeProperties(cp.Properties)["TRAN_PREPARED_QUEUE_OFFSET"])
	require.Equal(t, codec.CheckTransactionStateRequestHeader{Topic: "TopicCk", TranStateTableOffset: 1,
		CommitLogOffset: cp.PhysicalOffset, MsgID: "UC", TransactionID: "UC",
		OffsetMsgID: codec.OffsetMsgID(db.b.storeHost, cp.PhysicalOffset), BrokerName: "broker-test"}, ch)
	require.Equal(t, []string{"0,"}, opBodies(t, db.b.store), "the first copy is retired")
	body := remotingtest.Records(t, check.Body)
	require.Len(t, body, 1)
	require.Equal(t, "TopicCk", string(body[0].Topic))
	require.Equal(t, int32(1), body[0].QueueID)
	require.Equal(t, "checked", string(body[0].Body))
	require.Equal(t, "PG", codec.DecodeProperties(body[0].Properties)["PGROUP"])

	// Not answered: checked again one run later, the count goes up.
	clock.Advance(db.b.cfg.TransactionTimeOut)
	tx.CheckTransactions()
	testutil.Eventually(t, "two CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 2 })
	ch = checkHeader(t, c.requests(codec.RequestCheckTransactionState)[1])
	require.Equal(t, int64(2), ch.TranStateTableOffset)
	halves = queueRecords(t, db.b.store, metadata.TransHalfTopic, 0)
	require.Equal(t, "2", codec.DecodeProperties(halves[2].Properties)["TRANSACTION_CHECK_TIMES"])
	require.Equal(t, "0", codec.DecodeProperties(halves[2].Properties)["TRAN_PREPARED_QUEUE_OFFSET"])

	// The producer answers the check; then its own, late END for the first copy arrives.
	requireResponse(t, c.call(endTxCmd("PG", ch.TranStateTableOffset, ch.CommitLogOffset, "UC",
		codec.SysFlagTransactionCommit, true)), codec.ResponseSuccess, "")
	endTx(t, c, "PG", h, codec.SysFlagTransactionCommit)
	recs := queueRecords(t, db.b.store, "TopicCk", 1)
	require.Len(t, recs, 1, "committed once")
	require.Equal(t, "checked", string(recs[0].Body))
	clock.Advance(time.Hour)
	tx.CheckTransactions()
	require.Len(t, c.requests(codec.RequestCheckTransactionState), 2, "nothing left to check")
	require.Equal(t, int64(3), db.b.offsets.Query(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0))
}

func TestTransactionLateEndGoesToTheNewestCopy(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	h := sendHalf(t, c, "TopicLate", 0, "slow", "PG", "UL")
	clock.Advance(db.b.cfg.TransactionTimeOut)
	db.b.send.CheckTransactions() // copy at half offset 1, check sent
	testutil.Eventually(t, "one CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 1 })

	// The producer's own END for the first copy, slower than transactionTimeOut.
	endTx(t, c, "PG", h, codec.SysFlagTransactionCommit)
	require.Len(t, queueRecords(t, db.b.store, "TopicLate", 0), 1)
	require.Equal(t, []string{"0,", "1,"}, opBodies(t, db.b.store), "the newest copy was ended")
	// Its answer to the check changes nothing.
	ch := checkHeader(t, c.requests(codec.RequestCheckTransactionState)[0])
	requireResponse(t, c.call(endTxCmd("PG", ch.TranStateTableOffset, ch.CommitLogOffset, "UL",
		codec.SysFlagTransactionCommit, true)), codec.ResponseSuccess, "")
	require.Len(t, queueRecords(t, db.b.store, "TopicLate", 0), 1)
	clock.Advance(time.Hour)
	db.b.send.CheckTransactions()
	require.Len(t, c.requests(codec.RequestCheckTransactionState), 1)
}

func TestTransactionDiscardedAfterCheckMax(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, func(c *Config) {
		c.CheckTransactionMessage = false
		c.TransactionCheckMax = 2
	})
	c := dialPeer(t, db.addr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	sendHalf(t, c, "TopicMax", 0, "never answered", "PG", "UM")
	for range 3 {
		clock.Advance(db.b.cfg.TransactionTimeOut)
		db.b.send.CheckTransactions()
	}
	testutil.Eventually(t, "two CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 2 })
	kept := queueRecords(t, db.b.store, metadata.TransCheckMaxTimeTopic, 0)
	require.Len(t, kept, 1)
	require.Equal(t, "never answered", string(kept[0].Body))
	require.Equal(t, "2", codec.DecodeProperties(kept[0].Properties)["TRANSACTION_CHECK_TIMES"])
	_, ok := db.b.topics.Get(metadata.TransCheckMaxTimeTopic)
	require.True(t, ok)
	require.Equal(t, []string{"0,", "1,", "2,"}, opBodies(t, db.b.store))
	clock.Advance(time.Hour)
	db.b.send.CheckTransactions()
	require.Len(t, c.requests(codec.RequestCheckTransactionState), 2, "discarded: no more checks")
	require.Zero(t, db.b.store.GetMaxOffsetInQueue("TopicMax", 0))
}

func TestTransactionCheckWithoutProducerStillCounts(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	sendHalf(t, c, "TopicNoP", 0, "x", "PG", "UN")
	clock.Advance(db.b.cfg.TransactionTimeOut)
	db.b.send.CheckTransactions()
	require.Zero(t, db.b.send.TransactionChecks(), "no producer of PG is connected")
	halves := queueRecords(t, db.b.store, metadata.TransHalfTopic, 0)
	require.Len(t, halves, 2)
	require.Equal(t, "1", codec.DecodeProperties(halves[1].Properties)["TRANSACTION_CHECK_TIMES"])
}

func TestTransactionCheckImmunity(t *testing.T) {
	clock := testutil.NewManualClock()
	db := startClockBroker(t, clock.Now, noChecks)
	c := dialPeer(t, db.addr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	cmd := sendHalfCmd("TopicImm", 0, "immune", "PG", "UI", "CHECK_IMMUNITY_TIME_IN_SECONDS", "60")
	cmd.ExtFields["bornTimestamp"] = strconv.FormatInt(clock.Now().UnixMilli(), 10)
	require.Equal(t, int32(codec.ResponseSuccess), c.call(cmd).Code)
	sendHalf(t, c, "TopicImm", 0, "normal", "PG", "UJ")
	clock.Advance(db.b.cfg.TransactionTimeOut)
	db.b.send.CheckTransactions()
	// The immune half is put back unchecked; the one behind it is checked.
	testutil.Eventually(t, "one CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 1 })
	require.Equal(t, "UJ", checkHeader(t, c.requests(codec.RequestCheckTransactionState)[0]).MsgID)
	clock.Advance(61 * time.Second)
	db.b.send.CheckTransactions()
	testutil.Eventually(t, "three CHECK_TRANSACTION_STATE",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 3 })
	var ids []string
	for _, cmd := range c.requests(codec.RequestCheckTransactionState) {
		ids = append(ids, checkHeader(t, cmd).MsgID)
	}
	require.ElementsMatch(t, []string{"UJ", "UJ", "UI"}, ids)
}

// The transaction state lives in the store and consumerOffset.json: a restart neither forgets
// a pending half nor repeats a commit.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	tb := startTestBroker(t, func(c *Config) {
		c.CheckTransactionMessage = false
		c.TransactionTimeOut = time.Millisecond
	})
	c := dialPeer(t, tb.BrokerAddr, nil)
	hA := sendHalf(t, c, "TopicRs", 0, "A", "PG", "UA")
	hB := sendHalf(t, c, "TopicRs", 0, "B", "PG", "UB")
	sendHalf(t, c, "TopicRs", 0, "C", "PG", "UC")
	endTx(t, c, "PG", hA, codec.SysFlagTransactionCommit)
	endTx(t, c, "PG", hB, codec.SysFlagTransactionRollback)
	require.NoError(t, c.cl.Close())

	tb.restart(t)
	c = dialPeer(t, tb.BrokerAddr, nil)
	c.heartbeatProducer("10.0.0.1@p1", "PG")
	endTx(t, c, "PG", hA, codec.SysFlagTransactionCommit) // a repeat after the restart
	require.Equal(t, int64(1), tb.b.store.GetMaxOffsetInQueue("TopicRs", 0))
	testutil.Eventually(t, "two op-half records",
		func() bool { return tb.b.store.GetMaxOffsetInQueue(metadata.TransOpHalfTopic, 0) == 2 })
	tb.b.send.CheckTransactions()
	testutil.Eventually(t, "C is still pending and gets checked",
		func() bool { return len(c.requests(codec.RequestCheckTransactionState)) == 1 })
	ch := checkHeader(t, c.requests(codec.RequestCheckTransactionState)[0])
	require.Equal(t, "UC", ch.MsgID)
	require.Equal(t, int64(3), ch.TranStateTableOffset)
	require.NoError(t, c.cl.Close())

	tb.restart(t)
	require.Equal(t, int64(3), tb.b.offsets.Query(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0))
	c = dialPeer(t, tb.BrokerAddr, nil)
	requireResponse(t, c.call(endTxCmd("PG", ch.TranStateTableOffset, ch.CommitLogOffset, "UC",
		codec.SysFlagTransactionCommit, true)), codec.ResponseSuccess, "")
	testutil.Eventually(t, "TopicRs/0 dispatched",
		func() bool { return tb.b.store.GetMaxOffsetInQueue("TopicRs", 0) == 2 })
	var got []string
	for _, r := range queueRecords(t, tb.b.store, "TopicRs", 0) {
		got = append(got, string(r.Body))
	}
	require.Equal(t, []string{"A", "C"}, got)

	// As with RocketMQ, the op-half topic has no topic config: neither the broker's topic table
	// nor the name server's topic list (mqadmin topicList) shows it; the half topic they show.
	resp := c.call(codec.NewRequest(codec.RequestGetAllTopicConfig, nil, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	w, err := codec.DecodeTopicConfigSerializeWrapper(resp.Body)
	require.NoError(t, err)
	require.Contains(t, w.TopicConfigTable, metadata.TransHalfTopic)
	require.NotContains(t, w.TopicConfigTable, metadata.TransOpHalfTopic)
	ns := remotingtest.Dial(t, tb.NamesrvAddr)
	var list *codec.TopicList
	testutil.Eventually(t, "the broker registered TopicRs", func() bool {
		resp = ns.Call(codec.NewRequest(codec.RequestGetAllTopicListFromNameServer, nil, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		list, err = codec.DecodeTopicList(resp.Body)
		require.NoError(t, err)
		return slices.Contains(list.TopicList, "TopicRs")
	})
	require.Contains(t, list.TopicList, metadata.TransHalfTopic)
	require.NotContains(t, list.TopicList, metadata.TransOpHalfTopic)
}

// TestEndTransactionInEveryStoreMode: a direct commit, a direct rollback and a commit answering a check-back
// each end their half at once, in every store mode. The END refers to a record acknowledged microseconds
// before: with the transient pool it is still in the pool buffer (issue 14: every such END was answered
// "Find prepared transaction message failed" and the committed message was never delivered).
func TestEndTransactionInEveryStoreMode(t *testing.T) {
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			tb := startTestBroker(t, func(c *Config) {
				mode.apply(c)
				noChecks(c) // the test runs the check itself
				c.TransactionTimeOut = time.Millisecond
			})
			b := tb.b
			c := dialPeer(t, tb.BrokerAddr, nil)
			c.heartbeatProducer("10.0.0.1@p1", "PG")

			committed := sendHalf(t, c, "TopicTxModes", 0, "committed", "PG", "U1")
			endTx(t, c, "PG", committed, codec.SysFlagTransactionCommit)
			rolledBack := sendHalf(t, c, "TopicTxModes", 0, "rolled back", "PG", "U2")
			endTx(t, c, "PG", rolledBack, codec.SysFlagTransactionRollback)

			checked := sendHalf(t, c, "TopicTxModes", 0, "checked", "PG", "U3")
			// The half must be dispatched and older than transactionTimeOut (1 ms) on the broker's clock.
			testutil.Eventually(t, "a CHECK_TRANSACTION_STATE for the half", func() bool {
				if len(c.requests(codec.RequestCheckTransactionState)) > 0 {
					return true
				}
				b.send.CheckTransactions()
				return false
			})
			ch := checkHeader(t, c.requests(codec.RequestCheckTransactionState)[0])
			require.Equal(t, "U3", ch.TransactionID)
			require.NotEqual(t, offsetOf(t, checked.MsgID), ch.CommitLogOffset, "the check names the copy just written")
			requireResponse(t, c.call(endTxCmd("PG", ch.TranStateTableOffset, ch.CommitLogOffset, "U3",
				codec.SysFlagTransactionCommit, true)), codec.ResponseSuccess, "")

			testutil.Eventually(t, "both commits are visible once dispatched",
				func() bool { return b.store.GetMaxOffsetInQueue("TopicTxModes", 0) == 2 })
			var bodies []string
			for _, r := range queueRecords(t, b.store, "TopicTxModes", 0) {
				bodies = append(bodies, string(r.Body))
			}
			require.Equal(t, []string{"committed", "checked"}, bodies)
		})
	}
}
