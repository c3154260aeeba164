package controller

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Defaults (RocketMQ 5's ControllerConfig and BrokerConfig where the key is theirs).
const (
	// DefaultListenPort is the standalone controller's remoting port (listenPort); the raft
	// transport has its own port in controllerPeers.
	DefaultListenPort = 9879
	// DefaultScanNotActiveBrokerInterval is scanNotActiveBrokerInterval (5 s).
	DefaultScanNotActiveBrokerInterval = 5 * time.Second
	// DefaultBrokerHeartbeatTimeout is how long a replica stays alive after its last
	// heartbeat when the heartbeat names no heartbeatTimeoutMills (Java
	// DEFAULT_BROKER_CHANNEL_EXPIRED_TIME and the broker's controllerHeartBeatTimeoutMills:
	// 10 s).
	DefaultBrokerHeartbeatTimeout = 10 * time.Second
	// DefaultElectMasterMaxRetryCount is electMasterMaxRetryCount (3).
	DefaultElectMasterMaxRetryCount = 3
	// DefaultRaftHeartbeatTimeout and DefaultRaftElectionTimeout are hashicorp/raft's
	// defaults: a follower that hears nothing from the leader for about this long starts an
	// election.
	DefaultRaftHeartbeatTimeout = time.Second
	DefaultRaftElectionTimeout  = time.Second
	// requestTimeout bounds a raft apply made for a request (Java waits 5 s).
	requestTimeout = 5 * time.Second
)

// Peer is one controller of the raft group: its id and raft transport address.
type Peer struct {
	ID   string
	Addr string
}

// Config configures a controller. Build it with DefaultConfig; New validates it. The
// comments name the controller.conf / namesrv.conf key of each field.
type Config struct {
	// SelfID is this controller's id among Peers (controllerSelfId).
	SelfID string
	// Peers are all controllers (controllerPeers: "n0-127.0.0.1:9878;n1-127.0.0.1:9868").
	Peers []Peer
	// StorePath holds the raft log (raft.db, bolt) and snapshots (controllerStorePath;
	// default ~/controller/<SelfID>).
	StorePath string
	// ListenAddr is the standalone controller's remoting address (listenPort, bindAddress);
	// unused when the controller is embedded in a name server.
	ListenAddr string
	// AdvertiseAddr is the remoting address other controllers tell callers to use for this
	// one when it leads; empty: the host of its raft address with the remoting port.
	AdvertiseAddr string
	// ElectUncleanMaster lets an election choose a replica outside the SyncStateSet when no
	// member of it is alive (enableElectUncleanMaster, default false: such an election
	// fails, and the group has no master until a member comes back).
	ElectUncleanMaster bool
	// NotifyBrokerRoleChanged sends NOTIFY_BROKER_ROLE_CHANGED to the group's live replicas
	// after an election (notifyBrokerRoleChanged, default true).
	NotifyBrokerRoleChanged bool
	// ScanNotActiveBrokerInterval is how often the leader looks for replicas whose
	// heartbeats stopped (scanNotActiveBrokerInterval, 5 s).
	ScanNotActiveBrokerInterval time.Duration
	// BrokerHeartbeatTimeout is a replica's lifetime after its last heartbeat unless the
	// heartbeat says otherwise (controllerHeartBeatTimeoutMills, 10 s).
	BrokerHeartbeatTimeout time.Duration
	// ElectMasterMaxRetryCount bounds the attempts of an election the scan triggers
	// (electMasterMaxRetryCount, 3).
	ElectMasterMaxRetryCount int
	// RaftHeartbeatTimeout, RaftElectionTimeout: hashicorp/raft's timing
	// (controllerRaftHeartbeatTimeoutMillis, controllerRaftElectionTimeoutMillis; 1 s each).
	RaftHeartbeatTimeout time.Duration
	RaftElectionTimeout  time.Duration
	// NetEngine and NetEventLoops configure the standalone controller's remoting server
	// (netEngine, netEventLoops).
	NetEngine     string
	NetEventLoops int
}

// DefaultConfig returns RocketMQ 5's defaults; SelfID, Peers and StorePath must be set.
func DefaultConfig() Config {
	return Config{
		ListenAddr:                  fmt.Sprintf(":%d", DefaultListenPort),
		NotifyBrokerRoleChanged:     true,
		ScanNotActiveBrokerInterval: DefaultScanNotActiveBrokerInterval,
		BrokerHeartbeatTimeout:      DefaultBrokerHeartbeatTimeout,
		ElectMasterMaxRetryCount:    DefaultElectMasterMaxRetryCount,
		RaftHeartbeatTimeout:        DefaultRaftHeartbeatTimeout,
		RaftElectionTimeout:         DefaultRaftElectionTimeout,
		NetEngine:                   "gnet",
		NetEventLoops:               1,
	}
}

// ParsePeers reads controllerPeers: "id-host:port" entries separated by ';' (a trailing ';'
// and spaces are allowed).
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "-")
		if !ok || id == "" {
			return nil, fmt.Errorf("%w: controllerPeers entry %q: want id-host:port", ErrConfig, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: controllerPeers entry %q: %w", ErrConfig, part, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("%w: controllerPeers: id %q twice", ErrConfig, id)
		}
		seen[id] = true
		peers = append(peers, Peer{ID: id, Addr: addr})
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("%w: controllerPeers is empty", ErrConfig)
	}
	return peers, nil
}

// FormatPeers writes peers back in controllerPeers form.
func FormatPeers(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.ID + "-" + p.Addr
	}
	return strings.Join(parts, ";")
}

// self returns this controller's peer entry.
func (c *Config) self() (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == c.SelfID {
			return p, true
		}
	}
	return Peer{}, false
}

// Validate reports the first field out of range, naming its key (errors wrap ErrConfig).
func (c *Config) Validate() error {
	if len(c.Peers) == 0 {
		return fmt.Errorf("%w: controllerPeers is empty", ErrConfig)
	}
	if c.SelfID == "" {
		return fmt.Errorf("%w: controllerSelfId is empty", ErrConfig)
	}
	if _, ok := c.self(); !ok {
		return fmt.Errorf("%w: controllerSelfId %q is not in controllerPeers %q", ErrConfig, c.SelfID, FormatPeers(c.Peers))
	}
	if c.StorePath == "" {
		return fmt.Errorf("%w: controllerStorePath is empty", ErrConfig)
	}
	if c.ScanNotActiveBrokerInterval <= 0 {
		return fmt.Errorf("%w: scanNotActiveBrokerInterval %v must be positive", ErrConfig, c.ScanNotActiveBrokerInterval)
	}
	if c.BrokerHeartbeatTimeout <= 0 {
		return fmt.Errorf("%w: controllerHeartBeatTimeoutMills %v must be positive", ErrConfig, c.BrokerHeartbeatTimeout)
	}
	if c.ElectMasterMaxRetryCount <= 0 {
		return fmt.Errorf("%w: electMasterMaxRetryCount %d must be positive", ErrConfig, c.ElectMasterMaxRetryCount)
	}
	if c.RaftHeartbeatTimeout < 5*time.Millisecond || c.RaftElectionTimeout < 5*time.Millisecond {
		return fmt.Errorf("%w: controllerRaftHeartbeatTimeoutMillis and controllerRaftElectionTimeoutMillis must be at least 5 ms", ErrConfig)
	}
	return nil
}
