package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
)

// TestRouteTable pins where every request code runs and what the ACL asks of it: a change of
// placement is a change of behaviour under load (a disk-bound handler on the event loop
// stalls every connection of that loop) and must show up in review as a change here.
func TestRouteTable(t *testing.T) {
	pools := map[poolName]string{poolNone: "", poolPull: "pull", poolQuery: "query", poolAdmin: "admin"}
	var got []string
	for _, r := range routes {
		acl := ""
		switch {
		case r.acl.admin:
			acl = "admin"
		case r.acl.heartbeat:
			acl = "heartbeat body"
		case r.acl.send:
			acl = "send " + r.acl.topic
		case r.acl.topic != "" && r.acl.group != "" && r.acl.groupFirst:
			acl = "group " + r.acl.group + ", topic " + r.acl.topic
		case r.acl.topic != "" && r.acl.group != "":
			acl = "topic " + r.acl.topic + ", group " + r.acl.group
		case r.acl.topic != "":
			acl = "topic " + r.acl.topic
		case r.acl.group != "":
			acl = "group " + r.acl.group
		}
		got = append(got, fmt.Sprintf("%d %s %s | %s", r.code, r.where, pools[r.pool], acl))
	}
	slices.Sort(got)
	want := []string{
		"10 event loop  | send topic", "1007 pool admin | ", "1008 event loop  | ",
		"11 event loop, then pool pull | topic topic, group consumerGroup",
		"12 event loop, then pool query | topic topic",
		"14 event loop  | ",
		"15 event loop  | group consumerGroup, topic topic",
		"17 pool admin | admin",
		"200 pool admin | admin",
		"201 pool admin | ",
		"202 pool admin | ",
		"203 pool admin | ",
		"204 pool admin | ",
		"207 pool admin | admin",
		"208 pool admin | ",
		"21 pool admin | ",
		"215 pool admin | admin",
		"222 pool admin | ",
		"25 pool admin | admin",
		"26 pool admin | ",
		"28 pool admin | ",
		"29 event loop, then pool query | ",
		"30 event loop  | ",
		"300 pool admin | ",
		"31 event loop  | ",
		"310 event loop  | send b",
		"32 event loop, then pool query | ",
		"320 event loop  | send b",
		"324 event loop  | send topic",
		"325 event loop  | send b",
		"33 event loop, then pool query | ",
		"34 event loop  | heartbeat body",
		"35 event loop  | group consumerGroup",
		"351 pool admin | ",
		"352 pool admin | ",
		"36 event loop, then pool query | group group",
		"361 event loop, then pool pull | topic topic, group consumerGroup",
		"37 event loop, then pool query | ",
		"38 event loop  | group consumerGroup",
		"41 event loop  | ",
		"42 event loop  | ",
		"43 pool admin | ",
		"45 pool admin | ", "46 event loop  | ",
		"513 not served  | admin",
	}
	require.Equal(t, want, got)
}

func TestIndexRoutesRefusesMismatchedRoutes(t *testing.T) {
	handle := func(*Broker, *remoting.Request) {}
	split := func(*Broker, *remoting.Request) func() { return nil }
	bad := map[string][]route{
		"twice":             {{code: 1, where: onLoop, handle: handle}, {code: 1, where: onLoop, handle: handle}},
		"loop without fn":   {{code: 1, where: onLoop}},
		"loop with a pool":  {{code: 1, where: onLoop, handle: handle, pool: poolQuery}},
		"pool without pool": {{code: 1, where: onPool, handle: handle}},
		"split as handle":   {{code: 1, where: onLoopThenPool, pool: poolQuery, handle: handle}},
		"not served but fn": {{code: 1, handle: handle}},
		"split on loop":     {{code: 1, where: onLoop, handle: handle, split: split}},
	}
	for name, rs := range bad {
		_, err := indexRoutes(rs)
		require.Error(t, err, name)
	}
	m, err := indexRoutes([]route{{code: 1, where: onLoopThenPool, pool: poolPull, split: split}})
	require.NoError(t, err)
	require.Len(t, m, 1)
}

// TestNotServedCodeIsRefused: a code the table knows only for the ACL is answered like an
// unknown one.
func TestNotServedCodeIsRefused(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	for _, code := range []codec.RequestCode{requestUpdateAndCreateStaticTopic, 9997} {
		resp := c.Call(codec.NewRequest(code, nil, nil))
		require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)
		require.Equal(t, fmt.Sprintf(" request type %d not supported", code), resp.Remark)
	}
}
