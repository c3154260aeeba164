package clients

import (
	"github.com/ringmq/ringmq/broker/filter"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// ProcessCheckClientConfig serves CHECK_CLIENT_CONFIG (46), which a Java consumer with an
// SQL92 subscription (MessageSelector.bySql) sends to each broker at start; an error answer
// fails its start() with the remark. As RocketMQ's ClientManageProcessor.checkClientConfig:
// a TAG subscription (or none) is SUCCESS; another type with enablePropertyFilter off is
// SYSTEM_ERROR "The broker does not support consumer to filter message by <type>"; an
// expression that does not compile is SUBSCRIPTION_PARSE_FAILED with the compiler's message
// (Java's exception text: class, then reason). A type other than SQL92 is refused the same
// way with a remark naming it (Java fails there on a missing filter implementation).
func (p *Plane) ProcessCheckClientConfig(rc *remoting.Request) {
	body, err := codec.DecodeCheckClientRequestBody(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	sd := body.SubscriptionData
	if sd == nil || sd.ExpressionType == "" || sd.ExpressionType == codec.ExpressionTypeTag {
		rc.Reply.OK()
		return
	}
	if !p.d.Live.EnablePropertyFilter.Load() {
		rc.Reply.Answer(codec.ResponseSystemError,
			"The broker does not support consumer to filter message by "+sd.ExpressionType)
		return
	}
	if sd.ExpressionType != codec.ExpressionTypeSQL92 {
		rc.Reply.Answer(codec.ResponseSubscriptionParseFailed, "unknown expressionType "+sd.ExpressionType+
			" (TAG or SQL92)")
		return
	}
	if _, err := filter.Compile(sd.SubString); err != nil {
		rc.Reply.Answer(codec.ResponseSubscriptionParseFailed, err.Error())
		return
	}
	rc.Reply.OK()
}
