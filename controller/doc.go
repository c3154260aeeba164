// Package controller is ringmq's controller for automatic failover, RocketMQ 5's controller
// mode (RIP-44) on hashicorp/raft instead of DLedger: per broker group it keeps the
// replicas, the master, the master epoch and the SyncStateSet (the replicas in sync with the
// master), takes the brokers' heartbeats, and when a master stops heartbeating elects a new
// one from the SyncStateSet, bumps the epoch and tells the brokers. It runs alone
// (cmd/mqcontroller) or embedded in a name server (enableControllerInNamesrv=true), whose
// port then answers the controller's request codes too.
//
// # State
//
// The state is a raft FSM (fsm.go), replicated to every controller and kept in
// controllerStorePath: raft.db (raft-boltdb: the log and raft's own state) and snapshots/
// (raft's file snapshots: the FSM as JSON). A controller restarted from its store replays
// the snapshot and the log after it, so the state survives restarts of every controller.
// Per group (keyed by brokerName, as RocketMQ keys it: GET_REPLICA_INFO names only the
// broker name; the cluster name is recorded with the group):
//
//	replicas           brokerId → {address, registerCheckCode}; ids from 1, nextBrokerId
//	masterBrokerId     -1 while the group has no master
//	masterEpoch        +1 at every master change (also to "no master")
//	syncStateSetEpoch  +1 at every SyncStateSet change (an election resets it to {master})
//	syncStateSet       sorted brokerIds
//
// Every change is a raft log entry (a JSON command); the FSM checks each command against the
// state when it applies it, so a request decided on a stale view is refused, never applied
// wrongly, and every controller decides the same. Elections and SyncStateSet changes carry
// what the leader knew of the live replicas (their last epoch, max offset, election
// priority) in the entry, since heartbeats are not replicated.
//
// # Protocol
//
// RocketMQ 5's codes, header fields and JSON bodies (codec/headers_controller.go,
// codec/body_controller.go): CONTROLLER_ALTER_SYNC_STATE_SET 1001, CONTROLLER_ELECT_MASTER
// 1002, CONTROLLER_REGISTER_BROKER 1003, CONTROLLER_GET_REPLICA_INFO 1004,
// CONTROLLER_GET_METADATA_INFO 1005, CONTROLLER_GET_SYNC_STATE_DATA 1006,
// UPDATE_CONTROLLER_CONFIG 1009, GET_CONTROLLER_CONFIG 1010, CLEAN_BROKER_DATA 1011,
// CONTROLLER_GET_NEXT_BROKER_ID 1012, CONTROLLER_APPLY_BROKER_ID 1013 and BROKER_HEARTBEAT
// 904. The controller sends NOTIFY_BROKER_ROLE_CHANGED 1008 (oneway) to a group's live
// replicas after it elects a master (notifyBrokerRoleChanged=true). GET_BROKER_EPOCH_CACHE
// 1007 is a broker's request, not the controller's.
//
// Everything but heartbeats, GET_METADATA_INFO and the config requests needs the raft
// leader, reads included (as Java's DLedgerController answers them only as leader); a read
// first confirms the leadership with a quorum (raft VerifyLeader), so a deposed leader cut
// off from the others never answers from a stale state; a new leader serves only once its
// state holds every entry committed before its term (raft Barrier). A
// follower answers CONTROLLER_NOT_LEADER (2007) with Java's remark and, beyond Java, the
// leader's id and remoting address in GetMetaDataResponseHeader's fields
// (controllerLeaderId, controllerLeaderAddress); GET_METADATA_INFO names them too. A leader
// learns no other controller's remoting address from raft (raft knows transport addresses),
// so each controller records its own in the FSM when it becomes leader.
//
// # Heartbeats and elections
//
// Brokers send BROKER_HEARTBEAT (brokerId, epoch, maxOffset, confirmOffset,
// heartbeatTimeoutMills, electionPriority) to the leader. A replica is alive for
// heartbeatTimeoutMills after its last heartbeat (controllerHeartBeatTimeoutMills, 10 s, when
// the heartbeat names none). Every scanNotActiveBrokerInterval (5 s) the leader drops the
// replicas that went silent and elects a new master for each group whose master is not
// alive while another replica is; when the connection a master heartbeated on closes (a
// killed process), the election runs at once. A group an election left without a master is
// elected for again as soon as a member of its SyncStateSet heartbeats (Java leaves that to
// the returning broker's own request, which works here too). For one heartbeat timeout after a controller
// becomes leader it triggers no election: the brokers are still finding it.
//
// An election (elect.go) takes the live members of the SyncStateSet; the one with the
// highest epoch, then the largest max offset, then the lowest election priority, then the
// lowest id wins. If no member is alive the election fails — the group has no master until a
// member of the SyncStateSet comes back — unless enableElectUncleanMaster=true, which then
// takes the best live replica outside it (and may lose acknowledged messages). The first
// election of a group takes the replica that asks for it.
//
// # RocketMQ 5 behaviours checked against its source
//
// Read in apache/rocketmq (controller/, remoting/protocol/header/controller/, common's
// ControllerConfig and BrokerConfig, docs/cn/controller/): ReplicasInfoManager's checks and
// their order and response codes and remarks (alterSyncStateSet: equal set, master, master
// epoch, SyncStateSet epoch, unknown replica, dead replica, master missing from the set;
// electMaster: first election takes the requester, MASTER_STILL_EXIST, a controller-triggered
// failure records "no master" and bumps the epoch, MASTER_NOT_AVAILABLE vs
// ELECT_MASTER_FAILED; applyBrokerId: a new group only accepts id 1, a taken id only with
// the same registerCheckCode, nextBrokerId +1 per replica added; registerBroker: master
// fields only while the master is alive, the address updated when it changed;
// cleanBrokerData: refused for a group with a master or a live named replica unless
// isCleanLivingBroker); SyncStateInfo's epoch bumps; DefaultElectPolicy's order
// (SyncStateSet, then all replicas only when unclean; old master kept; designated broker or
// nothing; epoch, max offset, priority); DefaultBrokerHeartbeatManager (epoch and offset
// only move forward; expiry by the heartbeat's own timeout, 10 s default; a closed channel
// makes the broker inactive); ControllerManager (only a master's inactivity triggers an
// election, up to electMasterMaxRetryCount tries; NOTIFY_BROKER_ROLE_CHANGED oneway to the
// live replicas with the SyncStateSet body); ControllerRequestProcessor (the heartbeat
// without brokerId is CONTROLLER_INVALID_REQUEST; the config black list answers
// NO_PERMISSION); the request and response header field names and body shapes.
//
// Differences: the consensus engine is raft, so the peers are controllerPeers/
// controllerSelfId instead of controllerDLegerPeers/controllerDLegerSelfId; ties in an
// election go to the lowest broker id (Java's TreeSet keeps an arbitrary one);
// CLEAN_BROKER_DATA also parses the ids with isCleanLivingBroker (Java then drops the whole
// group); removing a group's master with it also clears the master; liveness is keyed by
// broker name and id (Java adds the cluster name), so a heartbeat without clusterName counts; UPDATE_CONTROLLER_CONFIG
// changes enableElectUncleanMaster, notifyBrokerRoleChanged and
// controllerHeartBeatTimeoutMills at run time and does not write them to a file.
//
// # How a broker uses it
//
// A broker in controller mode (controllerAddr lists the controllers, or the name servers
// that embed them) does the following; Client (client.go) does each step over remoting,
// following the leader:
//
//  1. finds the leader with CONTROLLER_GET_METADATA_INFO (or follows a
//     CONTROLLER_NOT_LEADER answer's controllerLeaderAddress);
//  2. without a brokerId yet: CONTROLLER_GET_NEXT_BROKER_ID, then CONTROLLER_APPLY_BROKER_ID
//     with registerCheckCode "brokerAddr;timestamp" (retry with a new next id on
//     CONTROLLER_BROKER_ID_INVALID), and keeps the id in its store;
//  3. CONTROLLER_REGISTER_BROKER with its id and address: the answer names the live master
//     and the epochs, and the body the SyncStateSet; with no master it asks
//     CONTROLLER_ELECT_MASTER for itself (the first broker of a group becomes master);
//  4. sends BROKER_HEARTBEAT every second with its epoch and max offset;
//  5. as master, CONTROLLER_ALTER_SYNC_STATE_SET when a slave falls behind haMaxGapNotInSync
//     or catches up, with its masterBrokerId and masterEpoch in the header and the current
//     SyncStateSet epoch in the body; a FENCED answer means it is no longer master;
//  6. on NOTIFY_BROKER_ROLE_CHANGED (or by polling CONTROLLER_GET_REPLICA_INFO) learns the
//     new master and epoch and changes role.
package controller
