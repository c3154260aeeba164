package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// ResponseError is a controller's answer other than SUCCESS: a broker acts on the code
// (CONTROLLER_FENCED_MASTER_EPOCH: it is no longer master; CONTROLLER_BROKER_ID_INVALID: try
// another id; ...).
type ResponseError struct {
	Code   codec.ResponseCode
	Remark string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("controller: answered %s (%d): %s", e.Code, int32(e.Code), e.Remark)
}

// ErrNoLeader: none of the controllers named a leader (they may be electing one).
var ErrNoLeader = errors.New("controller: no controller names a leader")

// Role is what the controllers say of a broker group: its master (MasterBrokerID -1 when it
// has none, or none that is alive) and epochs, and the SyncStateSet when the answer carries it.
type Role struct {
	MasterBrokerID    int64
	MasterAddress     string
	MasterEpoch       int32
	SyncStateSetEpoch int32
	SyncStateSet      []int64
}

// Client is the controller API of a broker in controller mode, over remoting: it finds the
// leader among the controller addresses (controllerAddr: controllers, or name servers that
// embed them), sends each request there, and on CONTROLLER_NOT_LEADER or a broken connection
// asks again where the leader is and retries once. Safe for concurrent use.
type Client struct {
	addrs []string
	net   *netio.Client

	mu     sync.Mutex
	leader string // "" until found, and after a failure
}

// NewClient returns a client of the controllers at addrs, sending over nc (which the caller
// owns and closes).
func NewClient(addrs []string, nc *netio.Client) *Client {
	return &Client{addrs: addrs, net: nc}
}

// Leader returns the leader's remoting address, asking the controllers when not known.
func (c *Client) Leader(ctx context.Context) (string, error) {
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	if leader != "" {
		return leader, nil
	}
	var errs []error
	for _, addr := range c.addrs {
		resp, err := c.net.Invoke(ctx, addr, codec.NewRequest(codec.RequestControllerGetMetadataInfo, map[string]string{}, nil))
		if err != nil {
			errs = append(errs, fmt.Errorf("controller %s: %w", addr, err))
			continue
		}
		if leader = resp.ExtFields["controllerLeaderAddress"]; leader != "" {
			c.setLeader(leader)
			return leader, nil
		}
	}
	return "", errors.Join(append([]error{ErrNoLeader}, errs...)...)
}

func (c *Client) setLeader(addr string) {
	c.mu.Lock()
	c.leader = addr
	c.mu.Unlock()
}

// call sends a request to the leader and returns a SUCCESS answer, or the answer's code as
// a *ResponseError (ok lists other codes taken as answers).
func (c *Client) call(ctx context.Context, code codec.RequestCode, h codec.CustomHeader, body []byte,
	ok ...codec.ResponseCode) (*codec.RemotingCommand, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		leader, err := c.Leader(ctx)
		if err != nil {
			return nil, err
		}
		ext := map[string]string{}
		if h != nil {
			h.Encode(ext)
		}
		resp, err := c.net.Invoke(ctx, leader, codec.NewRequest(code, ext, body))
		if err != nil {
			c.setLeader("")
			lastErr = fmt.Errorf("controller %s: %w", leader, err)
			continue
		}
		rc := codec.ResponseCode(resp.Code)
		if rc == codec.ResponseControllerNotLeader {
			c.setLeader(resp.ExtFields["controllerLeaderAddress"]) // "" makes Leader ask again
			lastErr = &ResponseError{Code: rc, Remark: resp.Remark}
			continue
		}
		if rc != codec.ResponseSuccess && !containsCode(ok, rc) {
			return resp, &ResponseError{Code: rc, Remark: resp.Remark}
		}
		return resp, nil
	}
	return nil, lastErr
}

func containsCode(codes []codec.ResponseCode, c codec.ResponseCode) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

// Heartbeat sends BROKER_HEARTBEAT (a broker sends it every second with its epoch and max
// offset).
func (c *Client) Heartbeat(ctx context.Context, h *codec.BrokerHeartbeatRequestHeader) error {
	_, err := c.call(ctx, codec.RequestBrokerHeartbeat, h, nil)
	return err
}

// ApplyBrokerID gets a brokerId for a broker without one: the next id of the group, applied
// for with registerCheckCode "brokerAddr;checkTime"; another broker taking it first
// (CONTROLLER_BROKER_ID_INVALID) makes it try the next, up to three times.
func (c *Client) ApplyBrokerID(ctx context.Context, clusterName, brokerName, brokerAddr string, checkTime int64) (int64, error) {
	group := &codec.BrokerGroupHeader{ClusterName: clusterName, BrokerName: brokerName}
	var err error
	for range 3 {
		var resp *codec.RemotingCommand
		if resp, err = c.call(ctx, codec.RequestControllerGetNextBrokerID, group, nil); err != nil {
			return 0, err
		}
		var next codec.GetNextBrokerIDResponseHeader
		if err = next.Decode(resp.ExtFields); err != nil {
			return 0, err
		}
		_, err = c.call(ctx, codec.RequestControllerApplyBrokerID, &codec.ApplyBrokerIDRequestHeader{
			ClusterName: clusterName, BrokerName: brokerName, AppliedBrokerID: next.NextBrokerID,
			RegisterCheckCode: brokerAddr + ";" + strconv.FormatInt(checkTime, 10)}, nil)
		var re *ResponseError
		if err == nil {
			return next.NextBrokerID, nil
		}
		if !errors.As(err, &re) || re.Code != codec.ResponseControllerBrokerIDInvalid {
			return 0, err
		}
	}
	return 0, err
}

// RegisterBroker reports a broker's address under its id and returns the group's role: the
// live master (if any) and epochs, and the SyncStateSet.
func (c *Client) RegisterBroker(ctx context.Context, clusterName, brokerName string, brokerID int64, brokerAddr string) (*Role, error) {
	resp, err := c.call(ctx, codec.RequestControllerRegisterBroker, &codec.RegisterBrokerToControllerRequestHeader{
		ClusterName: clusterName, BrokerName: brokerName, BrokerID: brokerID, BrokerAddress: brokerAddr}, nil)
	if err != nil {
		return nil, err
	}
	var h codec.RoleHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	role := &Role{MasterBrokerID: h.MasterBrokerID.Or(noMaster), MasterAddress: h.MasterAddress,
		MasterEpoch: h.MasterEpoch.Value, SyncStateSetEpoch: h.SyncStateSetEpoch.Value}
	return role, role.readSyncStateSet(resp.Body)
}

// ElectMaster asks for an election in the group (brokerID: the asking broker, which the
// group's first election makes master). An answer that the master is still alive
// (CONTROLLER_MASTER_STILL_EXIST) is a role too, not an error.
func (c *Client) ElectMaster(ctx context.Context, clusterName, brokerName string, brokerID int64) (*Role, error) {
	resp, err := c.call(ctx, codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{
		ClusterName: clusterName, BrokerName: brokerName, BrokerID: brokerID}, nil, codec.ResponseControllerMasterStillExist)
	if err != nil {
		return nil, err
	}
	var h codec.ElectMasterResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	role := &Role{MasterBrokerID: h.MasterBrokerID.Or(noMaster), MasterAddress: h.MasterAddress,
		MasterEpoch: h.MasterEpoch.Value, SyncStateSetEpoch: h.SyncStateSetEpoch.Value}
	body, err := codec.DecodeElectMasterResponseBody(resp.Body)
	if err != nil {
		return nil, err
	}
	role.SyncStateSet = body.SyncStateSet
	return role, nil
}

// ReplicaInfo returns the group's master, master epoch and SyncStateSet.
func (c *Client) ReplicaInfo(ctx context.Context, brokerName string) (*Role, error) {
	resp, err := c.call(ctx, codec.RequestControllerGetReplicaInfo, &codec.BrokerNameRequestHeader{BrokerName: brokerName}, nil)
	if err != nil {
		return nil, err
	}
	var h codec.GetReplicaInfoResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	role := &Role{MasterBrokerID: h.MasterBrokerID.Or(noMaster), MasterAddress: h.MasterAddress, MasterEpoch: h.MasterEpoch.Value}
	return role, role.readSyncStateSet(resp.Body)
}

// AlterSyncStateSet asks, as the group's master at masterEpoch, to replace the SyncStateSet
// of epoch setEpoch with set; it returns the new SyncStateSet epoch. A *ResponseError with
// CONTROLLER_FENCED_MASTER_EPOCH or CONTROLLER_INVALID_MASTER means the broker is no longer
// master; CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH that its view of the set is stale.
func (c *Client) AlterSyncStateSet(ctx context.Context, brokerName string, masterBrokerID int64, masterEpoch int32,
	set []int64, setEpoch int32) (int32, error) {
	body, err := (&codec.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: setEpoch}).Encode()
	if err != nil {
		return 0, err
	}
	resp, err := c.call(ctx, codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{
		BrokerName: brokerName, MasterBrokerID: codec.Some(masterBrokerID), MasterEpoch: codec.Some(masterEpoch)}, body)
	if err != nil {
		return 0, err
	}
	epoch, err := strconv.ParseInt(resp.ExtFields["newSyncStateSetEpoch"], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controller: AlterSyncStateSetResponseHeader: newSyncStateSetEpoch %q: %w",
			resp.ExtFields["newSyncStateSetEpoch"], err)
	}
	return int32(epoch), nil
}

func (r *Role) readSyncStateSet(body []byte) error {
	set, err := codec.DecodeSyncStateSet(body)
	if err != nil {
		return err
	}
	r.SyncStateSet, r.SyncStateSetEpoch = set.SyncStateSet, set.SyncStateSetEpoch
	return nil
}
