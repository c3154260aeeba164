package codec

// Headers of RocketMQ 5's controller requests (CONTROLLER_* 1001–1013, BROKER_HEARTBEAT 904,
// NOTIFY_BROKER_ROLE_CHANGED 1008), with the Java classes' field names
// (remoting/protocol/header/controller/…). Java marks few of these fields @CFNotNull; the
// keys a request cannot be served without (the broker name, mostly) are required here so
// that a request missing them is answered with an error naming the field. Numbers Java keeps
// boxed (Long, Integer: null when absent) are Optional.

// BrokerHeartbeatRequestHeader is the header of BROKER_HEARTBEAT (904), sent by a broker to
// the name servers and, in controller mode, to the controller leader every
// brokerHeartbeatInterval (1 s).
type BrokerHeartbeatRequestHeader struct {
	ClusterName           string          // clusterName
	BrokerAddr            string          // brokerAddr, required
	BrokerName            string          // brokerName, required
	BrokerID              Optional[int64] // brokerId; the controller refuses a heartbeat without one
	Epoch                 Optional[int32] // epoch: the broker's last master epoch
	MaxOffset             Optional[int64] // maxOffset: the broker's CommitLog max offset
	ConfirmOffset         Optional[int64] // confirmOffset
	HeartbeatTimeoutMills Optional[int64] // heartbeatTimeoutMills (Java's spelling)
	ElectionPriority      Optional[int32] // electionPriority: lower wins a tie
}

// Decode reads the keys.
func (h *BrokerHeartbeatRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "BrokerHeartbeatRequestHeader"}
	*h = BrokerHeartbeatRequestHeader{
		ClusterName:           r.str("clusterName", false),
		BrokerAddr:            r.str("brokerAddr", true),
		BrokerName:            r.str("brokerName", true),
		BrokerID:              r.optI64("brokerId"),
		Epoch:                 r.optI32("epoch"),
		MaxOffset:             r.optI64("maxOffset"),
		ConfirmOffset:         r.optI64("confirmOffset"),
		HeartbeatTimeoutMills: r.optI64("heartbeatTimeoutMills"),
		ElectionPriority:      r.optI32("electionPriority"),
	}
	return r.err
}

// Encode writes the keys.
func (h *BrokerHeartbeatRequestHeader) Encode(ext map[string]string) {
	extPutString(ext, "clusterName", h.ClusterName)
	ext["brokerAddr"] = h.BrokerAddr
	ext["brokerName"] = h.BrokerName
	extPutOptInt64(ext, "brokerId", h.BrokerID)
	extPutOptInt32(ext, "epoch", h.Epoch)
	extPutOptInt64(ext, "maxOffset", h.MaxOffset)
	extPutOptInt64(ext, "confirmOffset", h.ConfirmOffset)
	extPutOptInt64(ext, "heartbeatTimeoutMills", h.HeartbeatTimeoutMills)
	extPutOptInt32(ext, "electionPriority", h.ElectionPriority)
}

// AlterSyncStateSetRequestHeader is the header of CONTROLLER_ALTER_SYNC_STATE_SET (1001);
// the body is a SyncStateSet (the new set and the epoch it replaces).
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string          // brokerName, required
	MasterBrokerID Optional[int64] // masterBrokerId: the sender, which must be the master
	MasterEpoch    Optional[int32] // masterEpoch: the sender's master epoch
	InvokeTime     int64           // invokeTime, ms
}

// Decode reads the keys.
func (h *AlterSyncStateSetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "AlterSyncStateSetRequestHeader"}
	*h = AlterSyncStateSetRequestHeader{
		BrokerName:     r.str("brokerName", true),
		MasterBrokerID: r.optI64("masterBrokerId"),
		MasterEpoch:    r.optI32("masterEpoch"),
		InvokeTime:     r.i64("invokeTime", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *AlterSyncStateSetRequestHeader) Encode(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	extPutOptInt64(ext, "masterBrokerId", h.MasterBrokerID)
	extPutOptInt32(ext, "masterEpoch", h.MasterEpoch)
	extPutInt64(ext, "invokeTime", h.InvokeTime)
}

// ElectMasterRequestHeader is the header of CONTROLLER_ELECT_MASTER (1002). brokerId -1
// (the default) asks the controller to choose; with designateElect the named replica is
// chosen if it is eligible (mqadmin electMaster).
type ElectMasterRequestHeader struct {
	ClusterName    string // clusterName
	BrokerName     string // brokerName, required
	BrokerID       int64  // brokerId, default -1
	DesignateElect bool   // designateElect
	InvokeTime     int64  // invokeTime, ms
}

// Decode reads the keys.
func (h *ElectMasterRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ElectMasterRequestHeader"}
	*h = ElectMasterRequestHeader{
		ClusterName:    r.str("clusterName", false),
		BrokerName:     r.str("brokerName", true),
		BrokerID:       r.optI64("brokerId").Or(-1),
		DesignateElect: r.boolean("designateElect", false, false),
		InvokeTime:     r.i64("invokeTime", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *ElectMasterRequestHeader) Encode(ext map[string]string) {
	ext["clusterName"] = h.ClusterName
	ext["brokerName"] = h.BrokerName
	extPutInt64(ext, "brokerId", h.BrokerID)
	extPutBool(ext, "designateElect", h.DesignateElect)
	extPutInt64(ext, "invokeTime", h.InvokeTime)
}

// ElectMasterResponseHeader is the response header of CONTROLLER_ELECT_MASTER (1002); the
// body is an ElectMasterResponseBody.
type ElectMasterResponseHeader struct {
	MasterBrokerID    Optional[int64] // masterBrokerId
	MasterAddress     string          // masterAddress
	MasterEpoch       Optional[int32] // masterEpoch
	SyncStateSetEpoch Optional[int32] // syncStateSetEpoch
}

// Decode reads the keys.
func (h *ElectMasterResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ElectMasterResponseHeader"}
	*h = ElectMasterResponseHeader{
		MasterBrokerID:    r.optI64("masterBrokerId"),
		MasterAddress:     r.str("masterAddress", false),
		MasterEpoch:       r.optI32("masterEpoch"),
		SyncStateSetEpoch: r.optI32("syncStateSetEpoch"),
	}
	return r.err
}

// Encode writes the keys.
func (h *ElectMasterResponseHeader) Encode(ext map[string]string) {
	extPutOptInt64(ext, "masterBrokerId", h.MasterBrokerID)
	extPutString(ext, "masterAddress", h.MasterAddress)
	extPutOptInt32(ext, "masterEpoch", h.MasterEpoch)
	extPutOptInt32(ext, "syncStateSetEpoch", h.SyncStateSetEpoch)
}

// BrokerNameRequestHeader is the header of CONTROLLER_GET_REPLICA_INFO (1004)
// (GetReplicaInfoRequestHeader): just the broker name.
type BrokerNameRequestHeader struct {
	BrokerName string // brokerName, required
}

// Decode reads the keys.
func (h *BrokerNameRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetReplicaInfoRequestHeader"}
	*h = BrokerNameRequestHeader{BrokerName: r.str("brokerName", true)}
	return r.err
}

// Encode writes the keys.
func (h *BrokerNameRequestHeader) Encode(ext map[string]string) { ext["brokerName"] = h.BrokerName }

// GetReplicaInfoResponseHeader is the response header of CONTROLLER_GET_REPLICA_INFO
// (1004); the body is the group's SyncStateSet.
type GetReplicaInfoResponseHeader struct {
	MasterBrokerID Optional[int64] // masterBrokerId; absent while the group has no master
	MasterAddress  string          // masterAddress
	MasterEpoch    Optional[int32] // masterEpoch
}

// Decode reads the keys.
func (h *GetReplicaInfoResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetReplicaInfoResponseHeader"}
	*h = GetReplicaInfoResponseHeader{
		MasterBrokerID: r.optI64("masterBrokerId"),
		MasterAddress:  r.str("masterAddress", false),
		MasterEpoch:    r.optI32("masterEpoch"),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetReplicaInfoResponseHeader) Encode(ext map[string]string) {
	extPutOptInt64(ext, "masterBrokerId", h.MasterBrokerID)
	extPutString(ext, "masterAddress", h.MasterAddress)
	extPutOptInt32(ext, "masterEpoch", h.MasterEpoch)
}

// GetMetaDataResponseHeader is the response header of CONTROLLER_GET_METADATA_INFO (1005):
// who leads the controllers. A CONTROLLER_NOT_LEADER answer carries the leader fields too.
type GetMetaDataResponseHeader struct {
	Group                   string // group
	ControllerLeaderID      string // controllerLeaderId
	ControllerLeaderAddress string // controllerLeaderAddress: its remoting address
	IsLeader                bool   // isLeader: whether the answering controller leads
	Peers                   string // peers: "id:host:port;" per controller
}

// Decode reads the keys.
func (h *GetMetaDataResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetMetaDataResponseHeader"}
	*h = GetMetaDataResponseHeader{
		Group:                   r.str("group", false),
		ControllerLeaderID:      r.str("controllerLeaderId", false),
		ControllerLeaderAddress: r.str("controllerLeaderAddress", false),
		IsLeader:                r.boolean("isLeader", false, false),
		Peers:                   r.str("peers", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetMetaDataResponseHeader) Encode(ext map[string]string) {
	extPutString(ext, "group", h.Group)
	extPutString(ext, "controllerLeaderId", h.ControllerLeaderID)
	extPutString(ext, "controllerLeaderAddress", h.ControllerLeaderAddress)
	extPutBool(ext, "isLeader", h.IsLeader)
	extPutString(ext, "peers", h.Peers)
}

// CleanControllerBrokerDataRequestHeader is the header of CLEAN_BROKER_DATA (1011).
type CleanControllerBrokerDataRequestHeader struct {
	ClusterName                string // clusterName
	BrokerName                 string // brokerName, required
	BrokerControllerIdsToClean string // brokerControllerIdsToClean: "1;2"; empty = the whole group
	IsCleanLivingBroker        bool   // isCleanLivingBroker: clean even brokers still alive
	InvokeTime                 int64  // invokeTime, ms
}

// Decode reads the keys.
func (h *CleanControllerBrokerDataRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "CleanControllerBrokerDataRequestHeader"}
	*h = CleanControllerBrokerDataRequestHeader{
		ClusterName:                r.str("clusterName", false),
		BrokerName:                 r.str("brokerName", true),
		BrokerControllerIdsToClean: r.str("brokerControllerIdsToClean", false),
		IsCleanLivingBroker:        r.boolean("isCleanLivingBroker", false, false),
		InvokeTime:                 r.i64("invokeTime", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *CleanControllerBrokerDataRequestHeader) Encode(ext map[string]string) {
	extPutString(ext, "clusterName", h.ClusterName)
	ext["brokerName"] = h.BrokerName
	extPutString(ext, "brokerControllerIdsToClean", h.BrokerControllerIdsToClean)
	extPutBool(ext, "isCleanLivingBroker", h.IsCleanLivingBroker)
	extPutInt64(ext, "invokeTime", h.InvokeTime)
}

// BrokerGroupHeader is the header of CONTROLLER_GET_NEXT_BROKER_ID (1012)
// (GetNextBrokerIdRequestHeader) and the response header of CONTROLLER_APPLY_BROKER_ID
// (ApplyBrokerIdResponseHeader): cluster and broker name.
type BrokerGroupHeader struct {
	ClusterName string // clusterName, required
	BrokerName  string // brokerName, required
}

// Decode reads the keys.
func (h *BrokerGroupHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetNextBrokerIdRequestHeader"}
	*h = BrokerGroupHeader{ClusterName: r.str("clusterName", true), BrokerName: r.str("brokerName", true)}
	return r.err
}

// Encode writes the keys.
func (h *BrokerGroupHeader) Encode(ext map[string]string) {
	ext["clusterName"] = h.ClusterName
	ext["brokerName"] = h.BrokerName
}

// GetNextBrokerIDResponseHeader is the response header of CONTROLLER_GET_NEXT_BROKER_ID
// (1012).
type GetNextBrokerIDResponseHeader struct {
	ClusterName  string // clusterName
	BrokerName   string // brokerName
	NextBrokerID int64  // nextBrokerId: 1 for a group the controller does not know
}

// Decode reads the keys.
func (h *GetNextBrokerIDResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetNextBrokerIdResponseHeader"}
	*h = GetNextBrokerIDResponseHeader{
		ClusterName:  r.str("clusterName", false),
		BrokerName:   r.str("brokerName", false),
		NextBrokerID: r.i64("nextBrokerId", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetNextBrokerIDResponseHeader) Encode(ext map[string]string) {
	extPutString(ext, "clusterName", h.ClusterName)
	extPutString(ext, "brokerName", h.BrokerName)
	extPutInt64(ext, "nextBrokerId", h.NextBrokerID)
}

// ApplyBrokerIDRequestHeader is the header of CONTROLLER_APPLY_BROKER_ID (1013).
type ApplyBrokerIDRequestHeader struct {
	ClusterName       string // clusterName, required
	BrokerName        string // brokerName, required
	AppliedBrokerID   int64  // appliedBrokerId, required
	RegisterCheckCode string // registerCheckCode, required: "brokerAddr;timestamp"
}

// Decode reads the keys.
func (h *ApplyBrokerIDRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ApplyBrokerIdRequestHeader"}
	*h = ApplyBrokerIDRequestHeader{
		ClusterName:       r.str("clusterName", true),
		BrokerName:        r.str("brokerName", true),
		AppliedBrokerID:   r.i64("appliedBrokerId", true),
		RegisterCheckCode: r.str("registerCheckCode", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *ApplyBrokerIDRequestHeader) Encode(ext map[string]string) {
	ext["clusterName"] = h.ClusterName
	ext["brokerName"] = h.BrokerName
	extPutInt64(ext, "appliedBrokerId", h.AppliedBrokerID)
	ext["registerCheckCode"] = h.RegisterCheckCode
}

// RegisterBrokerToControllerRequestHeader is the header of CONTROLLER_REGISTER_BROKER
// (1003): a broker that holds a brokerId tells the controller its current address.
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName   string // clusterName
	BrokerName    string // brokerName, required
	BrokerID      int64  // brokerId, required
	BrokerAddress string // brokerAddress, required
	InvokeTime    int64  // invokeTime, ms
}

// Decode reads the keys.
func (h *RegisterBrokerToControllerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "RegisterBrokerToControllerRequestHeader"}
	*h = RegisterBrokerToControllerRequestHeader{
		ClusterName:   r.str("clusterName", false),
		BrokerName:    r.str("brokerName", true),
		BrokerID:      r.i64("brokerId", true),
		BrokerAddress: r.str("brokerAddress", true),
		InvokeTime:    r.i64("invokeTime", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *RegisterBrokerToControllerRequestHeader) Encode(ext map[string]string) {
	extPutString(ext, "clusterName", h.ClusterName)
	ext["brokerName"] = h.BrokerName
	extPutInt64(ext, "brokerId", h.BrokerID)
	ext["brokerAddress"] = h.BrokerAddress
	extPutInt64(ext, "invokeTime", h.InvokeTime)
}

// RoleHeader is the response header of CONTROLLER_REGISTER_BROKER (1003)
// (RegisterBrokerToControllerResponseHeader: with cluster and broker name) and the header of
// NOTIFY_BROKER_ROLE_CHANGED (1008) (NotifyBrokerRoleChangedRequestHeader: without): who
// the master is, at which epochs. The master fields are absent while the group has no live
// master.
type RoleHeader struct {
	ClusterName       string          // clusterName
	BrokerName        string          // brokerName
	MasterBrokerID    Optional[int64] // masterBrokerId
	MasterAddress     string          // masterAddress
	MasterEpoch       Optional[int32] // masterEpoch
	SyncStateSetEpoch Optional[int32] // syncStateSetEpoch
}

// Decode reads the keys.
func (h *RoleHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "NotifyBrokerRoleChangedRequestHeader"}
	*h = RoleHeader{
		ClusterName:       r.str("clusterName", false),
		BrokerName:        r.str("brokerName", false),
		MasterBrokerID:    r.optI64("masterBrokerId"),
		MasterAddress:     r.str("masterAddress", false),
		MasterEpoch:       r.optI32("masterEpoch"),
		SyncStateSetEpoch: r.optI32("syncStateSetEpoch"),
	}
	return r.err
}

// Encode writes the keys.
func (h *RoleHeader) Encode(ext map[string]string) {
	extPutString(ext, "clusterName", h.ClusterName)
	extPutString(ext, "brokerName", h.BrokerName)
	extPutOptInt64(ext, "masterBrokerId", h.MasterBrokerID)
	extPutString(ext, "masterAddress", h.MasterAddress)
	extPutOptInt32(ext, "masterEpoch", h.MasterEpoch)
	extPutOptInt32(ext, "syncStateSetEpoch", h.SyncStateSetEpoch)
}
