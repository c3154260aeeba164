package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
)

// resetOffsetByTime, in RocketMQ's two ways: first each broker is asked to reset the group
// itself (INVOKE_BROKER_TO_RESET_OFFSET, which tells the group's live consumers where to
// jump); a broker that answers CONSUMER_NOT_ONLINE (no live consumer to tell) or does not
// know the request (REQUEST_CODE_NOT_SUPPORTED) gets the old way instead: mqadmin reads the
// group's offsets, searches each queue's offset at the timestamp and commits it
// (UPDATE_CONSUMER_OFFSET), as RocketMQ's resetOffsetByTimeOld does.

type resetRow struct {
	BrokerName      string `json:"brokerName"`
	QueueID         int32  `json:"queueId"`
	BrokerOffset    int64  `json:"brokerOffset,omitempty"`
	ConsumerOffset  int64  `json:"consumerOffset,omitempty"`
	TimestampOffset int64  `json:"timestampOffset,omitempty"`
	ResetOffset     int64  `json:"resetOffset"`
	Via             string `json:"via"` // "broker" (the broker told the live consumers) or "offset" (committed by mqadmin)
}

type resetResult struct {
	Group     string     `json:"group"`
	Topic     string     `json:"topic"`
	Timestamp int64      `json:"timestamp"`
	Queues    []resetRow `json:"queues"`
	force     bool
	stamp     string
}

func (r *resetResult) text(w io.Writer) error {
	viaBroker := 0
	for _, q := range r.Queues {
		if q.Via == "broker" {
			viaBroker++
		}
	}
	if viaBroker == len(r.Queues) && viaBroker > 0 {
		// RocketMQ's form when the brokers did the reset.
		if _, err := fmt.Fprintf(w, "start reset consumer offset by specified, group[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
			r.Group, r.Topic, r.force, r.stamp, r.Timestamp); err != nil {
			return err
		}
		t := newTable(w, "#brokerName", "#queueId", "#offset")
		for _, q := range r.Queues {
			t.row(q.BrokerName, q.QueueID, q.ResetOffset)
		}
		return t.flush()
	}
	// resetOffsetByTimeOld's form; a broker that did the reset itself shows "-" for what
	// only the old way reads.
	if _, err := fmt.Fprintf(w, "reset consumer offset by specified consumerGroup[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
		r.Group, r.Topic, r.force, r.stamp, r.Timestamp); err != nil {
		return err
	}
	t := newTable(w, "#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#resetOffset")
	for _, q := range r.Queues {
		if q.Via == "broker" {
			t.row(q.BrokerName, q.QueueID, "-", "-", "-", q.ResetOffset)
			continue
		}
		t.row(q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.TimestampOffset, q.ResetOffset)
	}
	return t.flush()
}

func (a *app) resetOffsetByTimeCommand() *cobra.Command {
	var group, topic, stamp, brokerAddr string
	var force boolArg
	var cplus bool
	var queueID int32
	var offset int64
	cmd := &cobra.Command{
		Use:   "resetOffsetByTime",
		Short: "Reset consumer offset by timestamp(without client restart).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := a.parseTimestamp("s", stamp)
			if err != nil {
				return err
			}
			if !force.set {
				force.value = true // RocketMQ's default
			}
			f := cmd.Flags()
			only := resetScope{addr: brokerAddr}
			if f.Changed("queue") {
				only.queueID = codec.Some(queueID)
			}
			if f.Changed("offset") {
				if !only.queueID.Set {
					return usageError("-o (offset) needs -q (queue)")
				}
				only.offset = codec.Some(offset)
			}
			res, err := a.resetOffset(group, topic, ts, force.value, only)
			if err != nil {
				return err
			}
			res.stamp = stamp
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&group, "group", "g", "", "set the consumer group")
	f.StringVarP(&topic, "topic", "t", "", "set the topic")
	f.StringVarP(&stamp, "timestamp", "s", "", "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	f.VarP(&force, "force", "f", "set the force rollback by timestamp switch[true|false] (default true)")
	f.BoolVarP(&cplus, "cplus", "c", false, "reset c++ client offset (ignored: the offsets are the broker's)")
	f.StringVarP(&brokerAddr, "broker", "b", "", "broker addr: only this broker")
	f.Int32VarP(&queueID, "queue", "q", 0, "queue id: only this queue")
	f.Int64VarP(&offset, "offset", "o", 0, "expect queue offset (with -q): this offset instead of the timestamp's")
	for _, name := range []string{"group", "topic", "timestamp"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// cloneGroupOffsetCommand is RocketMQ's cloneGroupOffset: destGroup's offsets in the topic become
// srcGroup's. RocketMQ's tool reads srcGroup's consume stats and writes each queue's offset with
// UPDATE_CONSUMER_OFFSET; this one asks each master of the topic with CLONE_GROUP_OFFSET, which
// does the same on the broker in one request.
func (a *app) cloneGroupOffsetCommand() *cobra.Command {
	var src, dest, topic string
	var offline boolArg
	cmd := &cobra.Command{
		Use:   "cloneGroupOffset",
		Short: "clone offset from other group.",
		RunE: func(*cobra.Command, []string) error {
			src, dest, topic = strings.TrimSpace(src), strings.TrimSpace(dest), strings.TrimSpace(topic)
			masters, err := a.topicMasters(topic, "")
			if err != nil {
				return err
			}
			h := &codec.CloneGroupOffsetRequestHeader{SrcGroup: src, DestGroup: dest, Topic: topic, Offline: offline.value}
			res := &messageResult{}
			for _, b := range masters {
				if _, err := a.askBroker(b.Addr, codec.RequestCloneGroupOffset, h, nil,
					fmt.Sprintf("group %q to %q in topic %q", src, dest, topic)); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
			}
			res.message = fmt.Sprintf("clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]\n", src, dest, topic)
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&src, "srcGroup", "s", "", "set source consumer group")
	f.StringVarP(&dest, "destGroup", "d", "", "set destination consumer group")
	f.StringVarP(&topic, "topic", "t", "", "set the topic")
	f.VarP(&offline, "offline", "o", "the group or the topic is offline")
	for _, name := range []string{"srcGroup", "destGroup", "topic"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// resetScope narrows a reset to one broker, one queue, or one queue to a given offset.
type resetScope struct {
	addr    string
	queueID codec.Optional[int32]
	offset  codec.Optional[int64]
}

func (a *app) resetOffset(group, topic string, ts int64, force bool, only resetScope) (*resetResult, error) {
	masters, err := a.topicMasters(topic, "")
	if err != nil {
		return nil, err
	}
	if only.addr != "" {
		masters = slices.DeleteFunc(masters, func(b brokerRef) bool { return b.Addr != only.addr })
		if len(masters) == 0 {
			return nil, fmt.Errorf("broker %s is not a master of topic %q", only.addr, topic)
		}
	}
	what := fmt.Sprintf("group %q and topic %q", group, topic)
	res := &resetResult{Group: group, Topic: topic, Timestamp: ts, Queues: []resetRow{}, force: force}
	for _, m := range masters {
		h := &codec.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: ts, IsForce: force,
			QueueID: only.queueID, Offset: only.offset}
		resp, err := a.askBroker(m.Addr, codec.RequestInvokeBrokerToResetOffset, h, nil, what)
		var re *adminclient.ResponseError
		switch {
		case err == nil:
			body, err := codec.DecodeResetOffsetBody(resp.Body)
			if err != nil {
				return nil, fmt.Errorf("reset offsets from broker %s: %w", m.Addr, err)
			}
			mqs := slices.Collect(maps.Keys(body.OffsetTable))
			sortQueues(mqs)
			for _, mq := range mqs {
				res.Queues = append(res.Queues, resetRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID,
					ResetOffset: body.OffsetTable[mq], Via: "broker"})
			}
		case errors.As(err, &re) && (re.Code == codec.ResponseConsumerNotOnline || re.Code == codec.ResponseRequestCodeNotSupported):
			rows, err := a.resetOffsetOld(m, group, topic, ts, force, only)
			if err != nil {
				return nil, err
			}
			res.Queues = append(res.Queues, rows...)
		default:
			return nil, err
		}
	}
	return res, nil
}

// resetOffsetOld is RocketMQ's resetOffsetByTimeOld on one master: per queue of the group's
// stats, the offset at the timestamp, committed when force or when it moves the group back.
func (a *app) resetOffsetOld(m brokerRef, group, topic string, ts int64, force bool, only resetScope) ([]resetRow, error) {
	what := fmt.Sprintf("group %q and topic %q", group, topic)
	resp, err := a.askBroker(m.Addr, codec.RequestGetConsumeStats,
		&codec.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}, nil, what)
	if err != nil {
		return nil, err
	}
	cs, err := codec.DecodeConsumeStats(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("consume stats from broker %s: %w", m.Addr, err)
	}
	mqs := slices.Collect(maps.Keys(cs.OffsetTable))
	sortQueues(mqs)
	var rows []resetRow
	for _, mq := range mqs {
		if mq.Topic != topic || (only.queueID.Set && mq.QueueID != only.queueID.Value) {
			continue
		}
		ow := cs.OffsetTable[mq]
		row := resetRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: ow.BrokerOffset,
			ConsumerOffset: ow.ConsumerOffset, Via: "offset"}
		if only.offset.Set {
			row.TimestampOffset = only.offset.Value
		} else {
			sh := &codec.SearchOffsetRequestHeader{Topic: topic, QueueID: mq.QueueID, Timestamp: ts}
			sresp, err := a.askBroker(m.Addr, codec.RequestSearchOffsetByTimestamp, sh, nil,
				fmt.Sprintf("topic %q queue %d", topic, mq.QueueID))
			if err != nil {
				return nil, err
			}
			var oh codec.OffsetResponseHeader
			if err := oh.Decode(sresp.ExtFields); err != nil {
				return nil, fmt.Errorf("offset search answer of broker %s: %w", m.Addr, err)
			}
			row.TimestampOffset = oh.Offset
		}
		row.ResetOffset = ow.ConsumerOffset
		if force || row.TimestampOffset < ow.ConsumerOffset {
			row.ResetOffset = row.TimestampOffset
		}
		uh := &codec.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: mq.QueueID, CommitOffset: row.ResetOffset}
		if _, err := a.askBroker(m.Addr, codec.RequestUpdateConsumerOffset, uh, nil,
			fmt.Sprintf("group %q topic %q queue %d offset %s", group, topic, mq.QueueID, strconv.FormatInt(row.ResetOffset, 10))); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}
