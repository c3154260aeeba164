package controller

import (
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

const (
	addr1 = "127.0.0.1:10911"
	addr2 = "127.0.0.1:10921"
	addr3 = "127.0.0.1:10931"
)

// TestServiceAnswersRocketMQShapes drives a broker group's life through one controller's
// port, as a RocketMQ 5 broker and mqadmin would, and checks each answer's code, remark,
// header fields and body bytes.
func TestServiceAnswersRocketMQShapes(t *testing.T) {
	c := waitLeader(t, startInmemCluster(t, 1, time.Now))
	cl := dial(t, c)

	// A broker without an id asks for the next one, applies for it, registers.
	resp := cl.requireOK(codec.RequestControllerGetNextBrokerID, &codec.BrokerGroupHeader{ClusterName: "c1", BrokerName: "broker-a"}, nil)
	require.Equal(t, map[string]string{"clusterName": "c1", "brokerName": "broker-a", "nextBrokerId": "1"}, resp.ExtFields)
	resp = cl.call(codec.RequestControllerApplyBrokerID, &codec.ApplyBrokerIDRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", AppliedBrokerID: 2, RegisterCheckCode: addr2 + ";1"}, nil)
	require.Equal(t, int32(codec.ResponseControllerBrokerIDInvalid), resp.Code)
	require.Equal(t, "Broker-set: broker-a hasn't been registered in controller, but broker try to apply brokerId: 2", resp.Remark)
	cl.registerReplica(1, addr1)
	cl.registerReplica(2, addr2)
	resp = cl.requireOK(codec.RequestControllerGetNextBrokerID, &codec.BrokerGroupHeader{ClusterName: "c1", BrokerName: "broker-a"}, nil)
	require.Equal(t, "3", resp.ExtFields["nextBrokerId"])

	resp = cl.requireOK(codec.RequestControllerRegisterBroker, &codec.RegisterBrokerToControllerRequestHeader{
		ClusterName: "c1", BrokerName: "broker-a", BrokerID: 1, BrokerAddress: addr1}, nil)
	require.Equal(t, map[string]string{"clusterName": "c1", "brokerName": "broker-a"}, resp.ExtFields, "no master yet")
	require.JSONEq(t, `{"syncStateSet":[],"syncStateSetEpoch":0}`, string(resp.Body))
	resp = cl.call(codec.RequestControllerRegisterBroker, &codec.RegisterBrokerToControllerRequestHeader{
		ClusterName: "c1", BrokerName: "broker-a", BrokerID: 7, BrokerAddress: addr3}, nil)
	require.Equal(t, int32(codec.ResponseControllerBrokerNeedToBeRegistered), resp.Code)
	require.Equal(t, "BrokerId: 7 hasn't been registered in broker-set: broker-a", resp.Remark)

	// Heartbeats; one without brokerId is refused as Java refuses it.
	cl.heartbeat(1, addr1, 0, 0)
	cl.heartbeat(2, addr2, 0, 0)
	resp = cl.call(codec.RequestBrokerHeartbeat, &codec.BrokerHeartbeatRequestHeader{BrokerAddr: addr1, BrokerName: "broker-a"}, nil)
	require.Equal(t, int32(codec.ResponseControllerInvalidRequest), resp.Code)
	require.Equal(t, "Heart beat with empty brokerId", resp.Remark)

	// The first broker to ask becomes master.
	resp = cl.requireOK(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", BrokerID: 1}, nil)
	require.Equal(t, map[string]string{"masterBrokerId": "1", "masterAddress": addr1, "masterEpoch": "1",
		"syncStateSetEpoch": "1"}, resp.ExtFields)
	require.Equal(t, `{"brokerMemberGroup":{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"1":"`+addr1+
		`","2":"`+addr2+`"}},"syncStateSet":[1]}`, string(resp.Body))
	body, err := codec.DecodeElectMasterResponseBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, body.SyncStateSet)

	// The master adds the slave to its SyncStateSet.
	set, err := (&codec.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode()
	require.NoError(t, err)
	resp = cl.call(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{BrokerName: "broker-a",
		MasterBrokerID: codec.Some[int64](2), MasterEpoch: codec.Some[int32](1)}, set)
	require.Equal(t, int32(codec.ResponseControllerInvalidMaster), resp.Code, "only the master may")
	resp = cl.requireOK(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{
		BrokerName: "broker-a", MasterBrokerID: codec.Some[int64](1), MasterEpoch: codec.Some[int32](1)}, set)
	require.Equal(t, map[string]string{"newSyncStateSetEpoch": "2"}, resp.ExtFields)
	require.Equal(t, `{"syncStateSet":[1,2],"syncStateSetEpoch":2}`, string(resp.Body))
	resp = cl.call(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{BrokerName: "broker-a",
		MasterBrokerID: codec.Some[int64](1), MasterEpoch: codec.Some[int32](1)}, []byte(`{"syncStateSet":[1,"x"]}`))
	require.Equal(t, int32(codec.ResponseControllerInvalidRequest), resp.Code)
	require.Contains(t, resp.Remark, "SyncStateSet")

	resp = cl.requireOK(codec.RequestControllerGetReplicaInfo, &codec.BrokerNameRequestHeader{BrokerName: "broker-a"}, nil)
	require.Equal(t, map[string]string{"masterBrokerId": "1", "masterAddress": addr1, "masterEpoch": "1"}, resp.ExtFields)
	require.Equal(t, `{"syncStateSet":[1,2],"syncStateSetEpoch":2}`, string(resp.Body))
	resp = cl.call(codec.RequestControllerGetReplicaInfo, &codec.BrokerNameRequestHeader{BrokerName: "broker-z"}, nil)
	require.Equal(t, int32(codec.ResponseControllerBrokerMetadataNotExist), resp.Code)
	require.Equal(t, "Broker metadata is not existed", resp.Remark)

	// A registering replica now learns the live master.
	resp = cl.requireOK(codec.RequestControllerRegisterBroker, &codec.RegisterBrokerToControllerRequestHeader{
		ClusterName: "c1", BrokerName: "broker-a", BrokerID: 2, BrokerAddress: addr2}, nil)
	require.Equal(t, map[string]string{"clusterName": "c1", "brokerName": "broker-a", "masterBrokerId": "1",
		"masterAddress": addr1, "masterEpoch": "1", "syncStateSetEpoch": "2"}, resp.ExtFields)

	names, err := codec.EncodeBrokerNameList([]string{"broker-a", "broker-z"})
	require.NoError(t, err)
	resp = cl.requireOK(codec.RequestControllerGetSyncStateData, nil, names)
	require.Equal(t, `{"replicasInfoTable":{"broker-a":{"masterBrokerId":1,"masterAddress":"`+addr1+
		`","masterEpoch":1,"syncStateSetEpoch":2,"inSyncReplicas":[{"brokerName":"broker-a","brokerId":1,"brokerAddress":"`+
		addr1+`","alive":true},{"brokerName":"broker-a","brokerId":2,"brokerAddress":"`+addr2+
		`","alive":true}],"notInSyncReplicas":[]}}}`, string(resp.Body))

	// An election while the master is alive keeps it.
	resp = cl.call(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{BrokerName: "broker-a", BrokerID: -1}, nil)
	require.Equal(t, int32(codec.ResponseControllerMasterStillExist), resp.Code)
	require.Equal(t, "The old master 1 is still alive, not need to elect new master for broker broker-a", resp.Remark)
	require.Equal(t, `{"syncStateSet":[1,2]}`, string(resp.Body))

	// A group with a master, or a live replica, is not cleaned without isCleanLivingBroker.
	resp = cl.call(codec.RequestCleanBrokerData, &codec.CleanControllerBrokerDataRequestHeader{BrokerName: "broker-a"}, nil)
	require.Equal(t, int32(codec.ResponseControllerInvalidCleanBrokerMetadata), resp.Code)
	require.Equal(t, "Broker broker-a is still alive, clean up failure", resp.Remark)
	resp = cl.call(codec.RequestCleanBrokerData, &codec.CleanControllerBrokerDataRequestHeader{BrokerName: "broker-a",
		BrokerControllerIdsToClean: "2"}, nil)
	require.Equal(t, int32(codec.ResponseControllerInvalidCleanBrokerMetadata), resp.Code)
	require.Equal(t, "Broker [broker-a,  2] is still alive, clean up failure", resp.Remark)
	resp = cl.call(codec.RequestCleanBrokerData, &codec.CleanControllerBrokerDataRequestHeader{BrokerName: "broker-a",
		BrokerControllerIdsToClean: "2;x"}, nil)
	require.Equal(t, int32(codec.ResponseControllerInvalidCleanBrokerMetadata), resp.Code)
	require.Contains(t, resp.Remark, "brokerControllerIdsToClean")
	cl.requireOK(codec.RequestCleanBrokerData, &codec.CleanControllerBrokerDataRequestHeader{BrokerName: "broker-a",
		BrokerControllerIdsToClean: "2", IsCleanLivingBroker: true}, nil)
	g, ok := c.FSM().Group("broker-a")
	require.True(t, ok)
	require.Equal(t, []int64{1}, g.ReplicaIDs())
	require.Equal(t, []int64{1}, g.SyncStateSet)

	// A header missing its broker name is refused naming the field.
	resp = cl.Call(codec.NewRequest(codec.RequestControllerGetReplicaInfo, map[string]string{}, nil))
	require.Equal(t, int32(codec.ResponseControllerInvalidRequest), resp.Code)
	require.Equal(t, `codec: GetReplicaInfoRequestHeader: field "brokerName": missing required header field`, resp.Remark)

	// Metadata and config.
	resp = cl.requireOK(codec.RequestControllerGetMetadataInfo, nil, nil)
	require.Equal(t, map[string]string{"group": "ringmq-controller", "controllerLeaderId": "n0",
		"controllerLeaderAddress": c.Addr().String(), "isLeader": "true", "peers": "n0:127.0.0.1:1;"}, resp.ExtFields)
	resp = cl.requireOK(codec.RequestGetControllerConfig, nil, nil)
	require.Contains(t, string(resp.Body), "enableElectUncleanMaster=false\n")
	cl.requireOK(codec.RequestUpdateControllerConfig, nil, []byte("enableElectUncleanMaster=true\n"))
	require.True(t, c.unclean.Load())
	resp = cl.call(codec.RequestUpdateControllerConfig, nil, []byte("controllerStorePath=/tmp/x\n"))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "Can not update config in black list.", resp.Remark)
	resp = cl.call(codec.RequestUpdateControllerConfig, nil, []byte("enableElectUnclean=true\n"))
	require.Equal(t, int32(codec.ResponseInvalidParameter), resp.Code)
	require.Equal(t, `unknown controller config key "enableElectUnclean"`, resp.Remark)
	resp = cl.call(codec.RequestUpdateControllerConfig, nil, []byte("notifyBrokerRoleChanged=maybe\n"))
	require.Equal(t, int32(codec.ResponseInvalidParameter), resp.Code)
	require.Equal(t, `notifyBrokerRoleChanged="maybe": not true or false`, resp.Remark)

	// Other codes are not the controller's.
	resp = cl.call(codec.RequestGetRouteInfoByTopic, nil, nil)
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)
	require.Equal(t, " request type 105 not supported", resp.Remark)
}

// TestMetricsDocListsControllerSeries: METRICS.md's controller rows are exactly the series a
// controller registers.
func TestMetricsDocListsControllerSeries(t *testing.T) {
	doc, err := os.ReadFile("../METRICS.md")
	require.NoError(t, err)
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(ringmq_controller_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	m, err := newMetrics(nil)
	require.NoError(t, err)
	var registered []string
	for _, c := range m.collectors() {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch((<-ch).String())
		require.Len(t, name, 2)
		registered = append(registered, name[1])
	}
	slices.Sort(documented)
	slices.Sort(registered)
	require.Equal(t, registered, documented)
}
