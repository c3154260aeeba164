package codec

import "fmt"

// Bodies of RocketMQ 5's controller requests and responses (remoting/protocol/body/…), JSON
// with Java's field names. Map keys that are broker ids are written quoted ("1"), which
// fastjson reads; bare keys ({1:"…"}) are accepted when decoding.

// SyncStateSet is the body of CONTROLLER_ALTER_SYNC_STATE_SET (the proposed set and the
// epoch it replaces), of its response (the new set and epoch), of
// CONTROLLER_GET_REPLICA_INFO, CONTROLLER_REGISTER_BROKER and NOTIFY_BROKER_ROLE_CHANGED.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// Encode returns the JSON body.
func (s *SyncStateSet) Encode() ([]byte, error) { return encodeBodyJSON(s, false, "SyncStateSet") }

// DecodeSyncStateSet parses a SyncStateSet body; a missing or negative broker id is an error.
func DecodeSyncStateSet(body []byte) (*SyncStateSet, error) {
	var s struct {
		SyncStateSet      *[]int64 `json:"syncStateSet"`
		SyncStateSetEpoch int32    `json:"syncStateSetEpoch"`
	}
	if err := decodeBodyJSON(body, &s, "SyncStateSet"); err != nil {
		return nil, err
	}
	if s.SyncStateSet == nil {
		return nil, fmt.Errorf("%w: SyncStateSet: field syncStateSet missing", ErrBodyField)
	}
	for _, id := range *s.SyncStateSet {
		if id < 0 {
			return nil, fmt.Errorf("%w: SyncStateSet: field syncStateSet: negative broker id %d", ErrBodyField, id)
		}
	}
	return &SyncStateSet{SyncStateSet: *s.SyncStateSet, SyncStateSetEpoch: s.SyncStateSetEpoch}, nil
}

// BrokerMemberGroup is a broker group's replicas (cluster, broker name, id → address).
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// ElectMasterResponseBody is the body of the CONTROLLER_ELECT_MASTER response.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// Encode returns the JSON body.
func (b *ElectMasterResponseBody) Encode() ([]byte, error) {
	return encodeBodyJSON(b, false, "ElectMasterResponseBody")
}

// DecodeElectMasterResponseBody parses an ElectMasterResponseBody.
func DecodeElectMasterResponseBody(body []byte) (*ElectMasterResponseBody, error) {
	var b ElectMasterResponseBody
	if err := decodeBodyJSON(body, &b, "ElectMasterResponseBody"); err != nil {
		return nil, err
	}
	return &b, nil
}

// ReplicaIdentity is one replica in BrokerReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is one group's state in BrokerReplicasInfo. MasterBrokerID is nil while the
// group has no master.
type ReplicasInfo struct {
	MasterBrokerID    *int64            `json:"masterBrokerId,omitempty"`
	MasterAddress     string            `json:"masterAddress,omitempty"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo is the body of the CONTROLLER_GET_SYNC_STATE_DATA response (whose
// request body is a JSON array of broker names).
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// Encode returns the JSON body.
func (b *BrokerReplicasInfo) Encode() ([]byte, error) {
	return encodeBodyJSON(b, false, "BrokerReplicasInfo")
}

// DecodeBrokerReplicasInfo parses a BrokerReplicasInfo body.
func DecodeBrokerReplicasInfo(body []byte) (*BrokerReplicasInfo, error) {
	var b BrokerReplicasInfo
	if err := decodeBodyJSON(body, &b, "BrokerReplicasInfo"); err != nil {
		return nil, err
	}
	return &b, nil
}

// DecodeBrokerNameList parses the CONTROLLER_GET_SYNC_STATE_DATA request body: a JSON array
// of broker names.
func DecodeBrokerNameList(body []byte) ([]string, error) {
	var names []string
	if err := decodeBodyJSON(body, &names, "brokerNames"); err != nil {
		return nil, err
	}
	return names, nil
}

// EncodeBrokerNameList returns the CONTROLLER_GET_SYNC_STATE_DATA request body.
func EncodeBrokerNameList(names []string) ([]byte, error) {
	return encodeBodyJSON(names, false, "brokerNames")
}

// EpochEntry is one epoch of a broker's epoch file: the CommitLog range [StartOffset,
// EndOffset) written under master epoch Epoch (EndOffset is Long.MAX_VALUE while open).
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EpochEntryCache is the body of the GET_BROKER_EPOCH_CACHE (1007) response, which a broker
// in controller mode answers.
type EpochEntryCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// Encode returns the JSON body.
func (c *EpochEntryCache) Encode() ([]byte, error) {
	return encodeBodyJSON(c, false, "EpochEntryCache")
}

// DecodeEpochEntryCache parses an EpochEntryCache body.
func DecodeEpochEntryCache(body []byte) (*EpochEntryCache, error) {
	var c EpochEntryCache
	if err := decodeBodyJSON(body, &c, "EpochEntryCache"); err != nil {
		return nil, err
	}
	return &c, nil
}
