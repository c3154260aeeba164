// Package sendplane is the broker's send plane: everything that puts a message into the
// store on a client's behalf.
//
//	SEND_MESSAGE 10, SEND_MESSAGE_V2 310,    send.go
//	SEND_BATCH_MESSAGE 320
//	SEND_REPLY_MESSAGE 324, V2 325           reply.go (and the push to the requester, 326)
//	CONSUMER_SEND_MSG_BACK 36                sendback.go (retry through the schedule queue, DLQ)
//	END_TRANSACTION 37                       transaction.go, with the transaction check service
//	                                         (check-back of halves nobody ended), whose state
//	                                         END_TRANSACTION shares
//
// # What it depends on
//
// New takes everything explicitly (Deps), as small interfaces the broker's parts satisfy: the
// store's put, wait and read methods (Store), the topic table with the creations a send may
// make (Topics), the subscription-group table (Groups, retry limits) and the consumer offsets
// (Offsets, the transaction cursors of CID_RMQ_SYS_TRANS) from package metadata, the
// producers' connections (Producers: FindConn for request-reply, AvailableConn for
// transaction checks), and the SYNC_MASTER wait (Replicas, *ha.Replicas's Wait; nil unless
// SYNC_MASTER). Settings are plain values the broker derives from its Config once: among them
// DelayLevels, the size of the messageDelayLevel table (a delay level is clamped to it), and
// HotMaxBehindBytes, the hot part of the CommitLog, which the read plane gets too. The plane
// writes SCHEDULE_TOPIC_XXXX records (AppendScheduleProperties); the broker's schedule service
// (broker/delay) delivers them. It registers no collectors of its own: it counts its
// SYSTEM_BUSY answers in the broker's ringmq_broker_system_busy_total{reason="pc_synchronized"}
// and {reason="flush_queue_full"} (Deps.PCBusy, Deps.FlushQueueFull). It does not import
// package broker.
//
// # Where each request runs
//
// The broker's dispatch table (broker/routes.go) places every request. Sends and replies run
// on the event loop (ProcessSendMessage, ProcessSendReplyMessage): a put copies into mapped
// memory and makes no syscall, and every wait is a callback. CONSUMER_SEND_MSG_BACK and
// END_TRANSACTION are split handlers (ProcessConsumerSendMsgBack, ProcessEndTransaction): they
// decode on the event loop and finish there when the record they read lies within
// HotMaxBehindBytes of the CommitLog's end (IsHotOffset), else return the rest for the query
// pool. The transaction check service has its own goroutine (StartTransactions,
// StopTransactions, run by the broker's service lifecycle).
//
// # The path of a send
//
//  1. Decode: ProcessSendMessage takes a pooled sendRequest and decodes the header into it
//     (full keys for 10, letter keys for 310 and 320; SYSTEM_ERROR naming the field).
//  2. Checks, in the Java broker's order (checkSend): broker writable, topic name valid, not a
//     system topic, topic exists or is auto-created, topic writable, queueId in range; a
//     negative queueId picks a write queue.
//  3. Properties (prepareMessage, prepareBatch): body and properties size, properties well
//     formed (ClientProperties: pairs with an empty value dropped, anything else malformed
//     refused MESSAGE_ILLEGAL), then re-encoded into the request's own buffers: WAIT dropped,
//     UNIQ_KEY added when missing, CLUSTER, and the redirections' keys — a retry past its
//     limit to the DLQ, a half message to RMQ_SYS_TRANS_HALF_TOPIC, a delayed one to
//     SCHEDULE_TOPIC_XXXX. A batch's items get the batch-level properties appended.
//  4. Put (put): SYSTEM_BUSY at once when the page cache is busy or, under SYNC_FLUSH, the group
//     commit queue is full; else PutMessage / PutMessages under the store's put lock, the status
//     mapped to the answer (putOutcome).
//  5. Waits, side by side: under SYNC_FLUSH the durability wait (Store.WaitDurable) and on a
//     SYNC_MASTER the replica wait (Replicas.Wait) start together, unless the message says
//     WAIT=false; each records its outcome and the last to finish answers (a replica failure
//     wins over a flush failure, as in RocketMQ). Their callbacks are bound once per pooled
//     request.
//  6. Answer: msgId (offsetMsgId; a batch's joined with ','), queueId, queueOffset,
//     transactionId (UNIQ_KEY), MSG_REGION and TRACE_ON, written through the request's Reply;
//     the sendRequest goes back to its pool once netio is done with the frame. An answer the
//     group commit's durability callback writes joins the round of the batch it completes with
//     (Reply.SendIn): a connection's answers of one sync are written once, at the batch's end.
//
// A send allocates nothing on the way (TestSendPathAllocations and BenchmarkSendPath in
// package broker hold it to 0 allocs/op).
package sendplane
