package codec

import (
	"errors"
	"reflect"
	"testing"
)

// controllerHeaders are the controller's typed headers, each with a valid field set.
var controllerHeaders = []struct {
	new func() CustomHeader
	ext map[string]string
}{
	{func() CustomHeader { return &BrokerHeartbeatRequestHeader{} }, map[string]string{"clusterName": "c1",
		"brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a", "brokerId": "1", "epoch": "2", "maxOffset": "1024",
		"confirmOffset": "1000", "heartbeatTimeoutMills": "10000", "electionPriority": "3"}},
	{func() CustomHeader { return &AlterSyncStateSetRequestHeader{} }, map[string]string{"brokerName": "broker-a",
		"masterBrokerId": "1", "masterEpoch": "2", "invokeTime": "1700000000000"}},
	{func() CustomHeader { return &ElectMasterRequestHeader{} }, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "brokerId": "-1", "designateElect": "false", "invokeTime": "1700000000000"}},
	{func() CustomHeader { return &ElectMasterResponseHeader{} }, map[string]string{"masterBrokerId": "2",
		"masterAddress": "127.0.0.1:10921", "masterEpoch": "3", "syncStateSetEpoch": "4"}},
	{func() CustomHeader { return &BrokerNameRequestHeader{} }, map[string]string{"brokerName": "broker-a"}},
	{func() CustomHeader { return &GetReplicaInfoResponseHeader{} }, map[string]string{"masterBrokerId": "1",
		"masterAddress": "127.0.0.1:10911", "masterEpoch": "1"}},
	{func() CustomHeader { return &GetMetaDataResponseHeader{} }, map[string]string{"group": "g",
		"controllerLeaderId": "n0", "controllerLeaderAddress": "127.0.0.1:9879", "isLeader": "true", "peers": "n0:127.0.0.1:9878;"}},
	{func() CustomHeader { return &CleanControllerBrokerDataRequestHeader{} }, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "brokerControllerIdsToClean": "1;2", "isCleanLivingBroker": "false", "invokeTime": "1"}},
	{func() CustomHeader { return &BrokerGroupHeader{} }, map[string]string{"clusterName": "c1", "brokerName": "broker-a"}},
	{func() CustomHeader { return &GetNextBrokerIDResponseHeader{} }, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "nextBrokerId": "3"}},
	{func() CustomHeader { return &ApplyBrokerIDRequestHeader{} }, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "appliedBrokerId": "2", "registerCheckCode": "127.0.0.1:10921;1700000000000"}},
	{func() CustomHeader { return &RegisterBrokerToControllerRequestHeader{} }, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "brokerId": "2", "brokerAddress": "127.0.0.1:10921", "invokeTime": "1"}},
	{func() CustomHeader { return &RoleHeader{} }, map[string]string{"clusterName": "c1", "brokerName": "broker-a",
		"masterBrokerId": "1", "masterAddress": "127.0.0.1:10911", "masterEpoch": "1", "syncStateSetEpoch": "2"}},
}

// FuzzControllerHeaders: the controller's headers decode random fields without panicking,
// fail only with a *FieldError, and re-encode to fields that decode to the same header.
func FuzzControllerHeaders(f *testing.F) {
	for _, h := range controllerHeaders {
		f.Add(extToFuzz(h.ext))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFromFuzz(data)
		for _, tc := range controllerHeaders {
			h := tc.new()
			if err := h.Decode(ext); err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%T: untyped error %v", h, err)
				}
				continue
			}
			out := map[string]string{}
			h.Encode(out)
			again := tc.new()
			if err := again.Decode(out); err != nil {
				t.Fatalf("%T: re-encoded %q does not decode: %v", h, out, err)
			}
			if !reflect.DeepEqual(h, again) {
				t.Fatalf("%T: round trip changed the header:\n%+v\n%+v", h, h, again)
			}
		}
	})
}

// FuzzControllerBodies: the controller's JSON bodies decode random bytes without panicking,
// fail only with ErrBodyJSON or ErrBodyField, and a decoded SyncStateSet re-encodes to a body
// that decodes to the same set.
func FuzzControllerBodies(f *testing.F) {
	for _, s := range []string{
		`{"syncStateSet":[1,2],"syncStateSetEpoch":3}`, `{syncStateSet:[1],syncStateSetEpoch:1}`, `["broker-a","broker-b"]`,
		`{"brokerMemberGroup":{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{1:"127.0.0.1:10911"}},"syncStateSet":[1]}`,
		`{"replicasInfoTable":{"broker-a":{"masterBrokerId":1,"masterAddress":"a","masterEpoch":1,"syncStateSetEpoch":2,` +
			`"inSyncReplicas":[{"brokerName":"broker-a","brokerId":1,"brokerAddress":"a","alive":true}],"notInSyncReplicas":[]}}}`,
		`{"clusterName":"c1","brokerName":"broker-a","brokerId":1,"epochList":[{"epoch":1,"startOffset":0,"endOffset":9223372036854775807}],"maxOffset":10}`,
		`{"syncStateSet":[-1]}`, `{}`, ``,
	} {
		f.Add([]byte(s))
	}
	typed := func(t *testing.T, what string, err error) {
		if err != nil && !errors.Is(err, ErrBodyJSON) && !errors.Is(err, ErrBodyField) {
			t.Fatalf("%s: untyped error %v", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		set, err := DecodeSyncStateSet(body)
		typed(t, "SyncStateSet", err)
		if err == nil {
			enc, err := set.Encode()
			if err != nil {
				t.Fatalf("SyncStateSet %+v does not encode: %v", set, err)
			}
			again, err := DecodeSyncStateSet(enc)
			if err != nil || !reflect.DeepEqual(set, again) {
				t.Fatalf("SyncStateSet round trip: %+v -> %s -> %+v (%v)", set, enc, again, err)
			}
		}
		_, err = DecodeBrokerNameList(body)
		typed(t, "broker names", err)
		_, err = DecodeElectMasterResponseBody(body)
		typed(t, "ElectMasterResponseBody", err)
		_, err = DecodeBrokerReplicasInfo(body)
		typed(t, "BrokerReplicasInfo", err)
		_, err = DecodeEpochEntryCache(body)
		typed(t, "EpochEntryCache", err)
	})
}
