package clients

import (
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// ctlConn is a netio.Conn for registry tests: it records oneway requests and closes.
// Methods it does not override panic through the nil embedded interface.
type ctlConn struct {
	netio.Conn
	id uint64

	mu      sync.Mutex
	oneways []*codec.RemotingCommand
	closed  bool
}

func (c *ctlConn) ID() uint64 { return c.id }
func (c *ctlConn) RemoteAddr() netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(30000+c.id))
}
func (c *ctlConn) InvokeOneway(cmd *codec.RemotingCommand) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.oneways = append(c.oneways, cmd)
	return nil
}
func (c *ctlConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// notifyLog records ConsumerManager notifications as group → member conn ids.
type notifyLog struct {
	mu     sync.Mutex
	events []string
}

func (l *notifyLog) record(group string, members []netio.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := group + ":"
	for i, c := range members {
		if i > 0 {
			s += ","
		}
		s += string(rune('0' + c.ID()))
	}
	l.events = append(l.events, s)
}

func (l *notifyLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

func TestConsumerManagerMembershipAndNotify(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewConsumerManager(clock.Now, 120*time.Second, logtest.Discard(), nil)
	var log notifyLog
	m.notify = log.record
	c1, c2, c1b := &ctlConn{id: 1}, &ctlConn{id: 2}, &ctlConn{id: 3}

	require.True(t, m.Register("G", ClientChannelInfo{Conn: c1, ClientID: "ip@1"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1))))
	require.Equal(t, []string{"G:1"}, log.take())
	require.False(t, m.Register("G", ClientChannelInfo{Conn: c1, ClientID: "ip@1"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1))),
		"a repeated heartbeat changes nothing")
	require.Empty(t, log.take())

	require.True(t, m.Register("G", ClientChannelInfo{Conn: c2, ClientID: "ip@2"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1))))
	require.Equal(t, []string{"G:1,2"}, log.take(), "every member is told, the new one too")
	require.Equal(t, []string{"ip@1", "ip@2"}, m.ConsumerIDs("G"))

	// A client that reconnects replaces its connection; the member set is unchanged.
	require.False(t, m.Register("G", ClientChannelInfo{Conn: c1b, ClientID: "ip@1"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1))))
	require.Empty(t, log.take())
	m.OnConnClosed(c1) // the old connection closing does not drop the reconnected client
	require.Equal(t, []string{"ip@1", "ip@2"}, m.ConsumerIDs("G"))
	require.Empty(t, log.take())

	m.OnConnClosed(c2)
	require.Equal(t, []string{"ip@1"}, m.ConsumerIDs("G"))
	require.Equal(t, []string{"G:3"}, log.take(), "the remaining member is told")

	require.False(t, m.Unregister("G", "ip@1", c1), "unregister on another connection is ignored")
	require.True(t, m.Unregister("G", "ip@1", c1b))
	require.Nil(t, m.ConsumerIDs("G"))
	_, ok := m.Group("G")
	require.False(t, ok, "an empty group is dropped")
	require.Empty(t, log.take(), "nobody left to tell")
}

func TestConsumerManagerSubscriptions(t *testing.T) {
	m := NewConsumerManager(time.Now, time.Minute, logtest.Discard(), nil)
	var log notifyLog
	m.notify = log.record
	c := &ctlConn{id: 1}
	ch := ClientChannelInfo{Conn: c, ClientID: "ip@1"}

	// The Go client's codeSet hashes UTF-8 bytes; the stored codes are Java's.
	goStyle := remotingtest.Subscription("T", 10, "TagA", "标签")
	goStyle.CodeSet = codec.TagCodeSet{2598919, 12345}
	m.Register("G", ch, remotingtest.ConsumerData("G", goStyle))
	log.take()
	got := m.FindSubscriptionData("G", "T")
	require.NotNil(t, got)
	require.Equal(t, codec.TagCodeSet{codec.JavaHashCode("TagA"), codec.JavaHashCode("标签")}, got.CodeSet)
	require.Equal(t, int64(10), got.SubVersion)

	// Same topic, older or equal version: ignored; newer: replaced, without a notification.
	older := remotingtest.Subscription("T", 9, "Other")
	require.False(t, m.Register("G", ch, remotingtest.ConsumerData("G", older)))
	require.Equal(t, []string{"TagA", "标签"}, m.FindSubscriptionData("G", "T").TagsSet)
	newer := remotingtest.Subscription("T", 11, "TagB")
	require.False(t, m.Register("G", ch, remotingtest.ConsumerData("G", newer)))
	require.Equal(t, codec.TagCodeSet{codec.JavaHashCode("TagB")}, m.FindSubscriptionData("G", "T").CodeSet)
	require.Empty(t, log.take())

	// A new topic, and a dropped one, are changes.
	require.True(t, m.Register("G", ch, remotingtest.ConsumerData("G", newer, remotingtest.Subscription("U", 1))))
	require.Equal(t, []string{"G"}, m.GroupsByTopic("U"))
	require.True(t, m.Register("G", ch, remotingtest.ConsumerData("G", remotingtest.Subscription("U", 1))))
	require.Nil(t, m.FindSubscriptionData("G", "T"))
	require.Equal(t, []string{"G:1", "G:1"}, log.take())
	require.Nil(t, m.FindSubscriptionData("Nope", "U"))
}

func TestClientExpiryWithInjectedClock(t *testing.T) {
	clock := testutil.NewManualClock()
	cm := NewConsumerManager(clock.Now, 120*time.Second, logtest.Discard(), nil)
	pm := NewProducerManager(clock.Now, 120*time.Second, logtest.Discard())
	var log notifyLog
	cm.notify = log.record
	old, fresh := &ctlConn{id: 1}, &ctlConn{id: 2}
	cm.Register("G", ClientChannelInfo{Conn: old, ClientID: "ip@1"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1)))
	pm.Register("PG", ClientChannelInfo{Conn: old, ClientID: "ip@1"})
	clock.Advance(60 * time.Second)
	cm.Register("G", ClientChannelInfo{Conn: fresh, ClientID: "ip@2"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1)))
	pm.Register("PG", ClientChannelInfo{Conn: fresh, ClientID: "ip@2"})
	log.take()

	clock.Advance(60 * time.Second) // old: exactly 120 s, not yet expired
	require.Empty(t, cm.ScanExpired())
	require.Empty(t, pm.ScanExpired())

	clock.Advance(time.Millisecond)
	require.Equal(t, []netio.Conn{old}, cm.ScanExpired())
	require.Equal(t, []netio.Conn{old}, pm.ScanExpired())
	require.Equal(t, []string{"ip@2"}, cm.ConsumerIDs("G"))
	require.Equal(t, []string{"G:2"}, log.take())
	conn, ok := pm.AvailableConn("PG")
	require.True(t, ok)
	require.Equal(t, netio.Conn(fresh), conn)
	_, ok = pm.FindConn("ip@1")
	require.False(t, ok)
}

func TestProducerManager(t *testing.T) {
	clock := testutil.NewManualClock()
	pm := NewProducerManager(clock.Now, time.Minute, logtest.Discard())
	a, b := &ctlConn{id: 1}, &ctlConn{id: 2}
	pm.Register("PG", ClientChannelInfo{Conn: a, ClientID: "ip@1", Language: codec.LanguageGo, Version: 317})
	clock.Advance(time.Second)
	pm.Register("PG", ClientChannelInfo{Conn: b, ClientID: "ip@2"})
	conn, ok := pm.AvailableConn("PG")
	require.True(t, ok)
	require.Equal(t, uint64(2), conn.ID(), "the latest heartbeat wins")
	conn, ok = pm.FindConn("ip@1")
	require.True(t, ok)
	require.Equal(t, uint64(1), conn.ID())
	members := pm.Members("PG")
	require.Len(t, members, 2)
	require.Equal(t, codec.LanguageGo, members[0].Language)
	require.False(t, pm.Unregister("PG", "ip@1", b))
	require.True(t, pm.Unregister("PG", "ip@1", a))
	pm.OnConnClosed(b)
	require.Nil(t, pm.Members("PG"))
	_, ok = pm.AvailableConn("PG")
	require.False(t, ok)
}

func TestRebalanceLockExpiry(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewRebalanceLockManager(clock.Now, DefaultLockMaxLiveTime)
	q0 := codec.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := codec.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}

	require.Equal(t, []codec.MessageQueue{q0, q1}, m.TryLockBatch("G", []codec.MessageQueue{q0, q1}, "A"))
	require.Empty(t, m.TryLockBatch("G", []codec.MessageQueue{q0, q1}, "B"))
	require.Equal(t, []codec.MessageQueue{q0}, m.TryLockBatch("G2", []codec.MessageQueue{q0}, "B"), "groups are independent")
	require.True(t, m.IsLockedByOther("G", "T", 0, "B"))
	require.False(t, m.IsLockedByOther("G", "T", 0, "A"))

	clock.Advance(50 * time.Second)
	require.Equal(t, []codec.MessageQueue{q0}, m.TryLockBatch("G", []codec.MessageQueue{q0}, "A"), "renewal")
	clock.Advance(DefaultLockMaxLiveTime) // q1 last renewed 110 s ago, q0 60 s ago (not yet expired)
	require.Equal(t, []codec.MessageQueue{q1}, m.TryLockBatch("G", []codec.MessageQueue{q0, q1}, "B"))
	clock.Advance(time.Millisecond)
	require.Equal(t, []codec.MessageQueue{q0}, m.TryLockBatch("G", []codec.MessageQueue{q0}, "B"), "expired: taken over")

	m.UnlockBatch("G", []codec.MessageQueue{q0, q1}, "A") // not A's any more: no effect
	require.Empty(t, m.TryLockBatch("G", []codec.MessageQueue{q0, q1}, "A"))
	m.UnlockBatch("G", []codec.MessageQueue{q0}, "B")
	require.Equal(t, []codec.MessageQueue{q0}, m.TryLockBatch("G", []codec.MessageQueue{q0, q1}, "A"))
	require.True(t, m.HasLiveLocks("G"))
	clock.Advance(2 * DefaultLockMaxLiveTime)
	require.False(t, m.HasLiveLocks("G"))

	// Expired locks are forgotten, with their groups; live ones stay.
	for i := range 100 {
		m.TryLockBatch("Junk"+strconv.Itoa(i), []codec.MessageQueue{{Topic: "Made-up" + strconv.Itoa(i)}}, "C")
	}
	require.Equal(t, []codec.MessageQueue{q1}, m.TryLockBatch("G", []codec.MessageQueue{q1}, "A"))
	require.Equal(t, 102, m.groupCount(), "G, G2 and the junk groups")
	require.Equal(t, 2, m.RemoveExpired(), "G's q0 and G2's q0, unrenewed")
	require.Equal(t, 101, m.groupCount())
	clock.Advance(DefaultLockMaxLiveTime + time.Millisecond)
	require.Equal(t, 101, m.RemoveExpired())
	require.Zero(t, m.groupCount())
}
