package admin

import (
	"fmt"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// ProcessViewBrokerStatsData answers one stats item's last minute, hour and day
// (VIEW_BROKER_STATS_DATA, mqadmin statsAll and the Dashboard), as RocketMQ's
// AdminBrokerProcessor.ViewBrokerStatsData does: SYSTEM_ERROR "The stats <name> <key> not exist"
// when the broker keeps no such item (a name it does not keep, a key nothing was counted for).
func (p *Plane) ProcessViewBrokerStatsData(rc *remoting.Request) {
	var h codec.ViewBrokerStatsDataRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	name, key := h.StatsName, h.StatsKey
	d, ok := p.d.Stats.Get(name, key)
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key))
		return
	}
	item := func(s brokerstats.Snapshot) codec.BrokerStatsItem {
		return codec.BrokerStatsItem{Sum: s.Sum, Tps: s.Tps, Avgpt: s.Avgpt}
	}
	body := (&codec.BrokerStatsData{StatsMinute: item(d.Minute), StatsHour: item(d.Hour), StatsDay: item(d.Day)}).Encode()
	rc.Reply.Body(body)
}

// consumeTps is a group's pull rate from topic over the last minute: GROUP_GET_NUMS of
// topic@group (RocketMQ's BrokerStatsManager.tpsGroupGetNums).
func (p *Plane) consumeTps(group, topic string) float64 {
	return p.d.Stats.MinuteTps(brokerstats.GroupGetNums, brokerstats.Key{Kind: brokerstats.KeyTopicGroup, Name: topic, Group: group}.String())
}

// appendConsumeStatsHead opens a ConsumeStats object with its consumeTps.
func appendConsumeStatsHead(body []byte, tps float64) []byte {
	body = append(body, `{"consumeTps":`...)
	body = codec.AppendJavaDouble(body, tps)
	return append(body, `,"offsetTable":{`...)
}
