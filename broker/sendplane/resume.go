package sendplane

import (
	"strconv"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// RESUME_CHECK_HALF_MESSAGE (323): an operator's way to have a transaction checked again,
// typically one the checker gave up on after transactionCheckMax checks and moved to
// TRANS_CHECK_MAX_TIME_TOPIC. As RocketMQ's AdminBrokerProcessor.resumeCheckHalfMessage, the
// message msgId names (an offset message id) is appended to the half queue again with its
// check count reset to 0; the check service then treats it as a new half: once it is older
// than transactionTimeOut its producer is asked for the outcome (transaction.go).
//
// Unlike RocketMQ, which re-puts whatever message the id names, only a half message (one that
// carries REAL_TOPIC, wherever it now lies) is taken: an ordinary message put into the half
// queue would be "committed" into its own topic a second time. The copy starts a chain of its
// own (TRAN_PREPARED_QUEUE_OFFSET removed). Resuming a half that is still pending makes a
// second pending copy of it, as in RocketMQ.

// Remarks of RESUME_CHECK_HALF_MESSAGE's refusals (RocketMQ's).
const (
	remarkResumePutFailed = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
	remarkResumeException = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
)

// ProcessResumeCheckHalfMessage serves 323. It reads the CommitLog: the broker runs it on
// the admin pool.
func (p *Plane) ProcessResumeCheckHalfMessage(rc *remoting.Request) {
	var h codec.ResumeCheckHalfMessageRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	code, remark := p.tx.resume(h.MsgID)
	rc.Reply.Answer(code, remark)
}

// resume appends the half msgID names to the half queue with TRANSACTION_CHECK_TIMES 0.
func (t *transactionService) resume(msgID string) (codec.ResponseCode, string) {
	p := t.p
	if p.set.IsSlave {
		return codec.ResponseSystemError, remarkResumePutFailed + " The broker is a slave."
	}
	_, offset, err := codec.DecodeOffsetMsgID(msgID)
	if err != nil {
		return codec.ResponseSystemError, remarkResumeException + " The custom field <msgId> " + strconv.Quote(msgID) +
			" is not an offset message id: " + err.Error()
	}
	rec, release, err := p.store.LookMessageByOffset(offset)
	if err != nil {
		return codec.ResponseSystemError, remarkResumeException + " No message found by msgId " + msgID + ": " + err.Error()
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return codec.ResponseSystemError, remarkResumeException + " " + err.Error()
	}
	if v, ok := codec.LookupProperty(r.Properties, codec.PropertyRealTopic); !ok || len(v) == 0 {
		return codec.ResponseSystemError, remarkResumePutFailed + " The message " + msgID + " of topic " + string(r.Topic) +
			" is not a transaction half message (it has no " + codec.PropertyRealTopic + ")."
	}
	props := codec.AppendPropertiesWithout(make([]byte, 0, len(r.Properties)+32), r.Properties,
		codec.PropertyTransactionCheckTimes, codec.PropertyTransactionPreparedQueue)
	props = appendPropertyInt(props, codec.PropertyTransactionCheckTimes, 0)
	msg := codec.Message{
		Topic:          metadata.TransHalfTopic,
		QueueID:        0,
		Flag:           r.Flag,
		SysFlag:        codec.ResetTransactionType(r.SysFlag, codec.SysFlagTransactionNot),
		BornTimestamp:  r.BornTimestamp,
		BornHost:       r.BornHost,
		StoreHost:      p.storeHost,
		ReconsumeTimes: r.ReconsumeTimes,
		Body:           r.Body,
		Properties:     props,
	}
	res, err := p.store.PutMessage(&msg)
	if code, remark := p.putOutcome(res, err); code != codec.ResponseSuccess {
		p.logger.Warn("broker: putting a half message back failed", "msgId", msgID, "code", code, "remark", remark)
		return codec.ResponseSystemError, remarkResumePutFailed
	}
	p.logger.Info("broker: half message put back to "+metadata.TransHalfTopic, "msgId", msgID,
		"realTopic", string(lookupOr(r.Properties, codec.PropertyRealTopic)), "halfOffset", res.QueueOffset)
	return codec.ResponseSuccess, ""
}
