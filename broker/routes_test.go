package broker

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// TestRouteTable pins where every request code runs and what the ACL asks of it: a change of
// placement is a change of behaviour under load (a disk-bound handler on the event loop
// stalls every connection of that loop) and must show up in review as a change here.
func TestRouteTable(t *testing.T) {
	pools := map[poolName]string{poolNone: "", poolPull: "pull", poolQuery: "query", poolAdmin: "admin"}
	var got []string
	for _, r := range routes {
		got = append(got, fmt.Sprintf("%d %s %s | %s", r.code, r.where, pools[r.pool], r.acl))
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
		"50 pool admin | admin", "51 pool admin | admin", "52 pool admin | admin", "53 pool admin | admin",
		"223 pool admin | ", "303 pool admin | ", "305 pool admin | ", "306 pool admin | ",
		"307 pool admin | ", "308 pool admin | ", "309 pool admin | ", "314 pool admin | ",
		"315 pool admin | ", "316 pool admin | ", "317 pool admin | ", "321 pool admin | ",
		"323 pool admin | ", "328 pool admin | ", "329 pool admin | ",
		"513 not served  | admin",
	}
	slices.Sort(want)
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
		"no reason":         {{code: 1}},
		"served, a reason":  {{code: 1, where: onLoop, handle: handle, reason: "why"}},
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

// javaBrokerCodes are the request codes RocketMQ 4.9.8's broker serves: those
// BrokerController.registerProcessor registers and the cases of AdminBrokerProcessor, its
// default processor.
var javaBrokerCodes = []int32{
	10, 11, 12, 14, 15, 17, 21, 25, 26, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 41, 42, 43, 45, 46,
	50, 51, 52, 53, 200, 201, 202, 203, 204, 207, 208, 215, 222, 223, 300, 303, 305, 306, 307, 308, 309,
	310, 314, 315, 316, 317, 320, 321, 323, 324, 325, 328, 329,
}

// TestRouteTableCoversJavaBroker: every code the Java broker serves has a row, served or with
// the reason it is not; and every one has a RocketMQ name, so that its requests are counted
// under it.
func TestRouteTableCoversJavaBroker(t *testing.T) {
	for _, code := range javaBrokerCodes {
		r := routeByCode[code]
		require.NotNil(t, r, "code %d has no row in routes.go", code)
		require.Equal(t, r.where == notServed, r.reason != "", "code %d", code)
		require.NotContains(t, codec.RequestCode(code).String(), "RequestCode(", "code %d has no name", code)
	}
}

// TestNotSupportedCodeCountedAndLogged: a code the Java broker serves and ringmq does not is
// refused as RocketMQ refuses an unknown code, counted under its own name (not <other>), and
// logged once at DEBUG with the reason.
func TestNotSupportedCodeCountedAndLogged(t *testing.T) {
	logger, rec := logtest.Logger()
	rb := startRelBrokerDeps(t, nil, nil, Deps{Logger: logger})
	t.Cleanup(func() { require.NoError(t, rb.close()) })
	// The first code of the Java broker's that ringmq does not serve.
	var r *route
	for _, code := range javaBrokerCodes {
		if routeByCode[code].where == notServed {
			r = routeByCode[code]
			break
		}
	}
	if r == nil {
		t.Skip("every code of the Java broker is served")
	}
	code, name := strconv.Itoa(int(r.code)), r.code.String()
	c := remotingtest.Dial(t, rb.addr)
	resp := c.Call(codec.NewRequest(r.code, map[string]string{}, nil))
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)
	require.Equal(t, " request type "+code+" not supported", resp.Remark)

	const line = "broker: request code not supported"
	notSupported := func() []slog.Record {
		var out []slog.Record
		for _, r := range rec.AtLevel(slog.LevelDebug) {
			if r.Message == line {
				out = append(out, r)
			}
		}
		return out
	}
	testutil.Eventually(t, "the refusal logged", func() bool { return len(notSupported()) > 0 })
	logged := notSupported()
	require.Len(t, logged, 1)
	require.Equal(t, code, logtest.Attr(logged[0], "code"))
	require.Equal(t, name, logtest.Attr(logged[0], "name"))
	require.Equal(t, r.reason, logtest.Attr(logged[0], "reason"))
	require.Equal(t, c.NetConn().LocalAddr().String(), logtest.Attr(logged[0], "remote"))

	s := scrapeOf(t, rb.b.registry)
	require.Equal(t, 1.0, s[`ringmq_broker_requests_total{code="`+name+`"}`])
	require.Equal(t, 1.0, s[`ringmq_broker_request_errors_total{code="`+name+`",response="REQUEST_CODE_NOT_SUPPORTED"}`])
	require.Zero(t, s[`ringmq_broker_requests_total{code="<other>"}`])
}
