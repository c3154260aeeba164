package controller

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringmq/ringmq/internal/conf"
)

// Defaults of what has no key (the keys' defaults are Config's default tags: RocketMQ 5's
// ControllerConfig and BrokerConfig values where the key is theirs).
const (
	// DefaultListenPort is the standalone controller's remoting port (listenPort); the raft
	// transport has its own port in controllerPeers.
	DefaultListenPort = 9879
	// requestTimeout bounds a raft apply made for a request (Java waits 5 s).
	requestTimeout = 5 * time.Second
)

// Peer is one controller of the raft group: its id and raft transport address.
type Peer struct {
	ID   string
	Addr string
}

// Peers are the controllers of the raft group, read from and written as controllerPeers.
type Peers []Peer

// UnmarshalText parses controllerPeers (ParsePeers).
func (p *Peers) UnmarshalText(b []byte) error {
	peers, err := ParsePeers(string(b))
	if err != nil {
		return err
	}
	*p = peers
	return nil
}

// MarshalText writes controllerPeers.
func (p Peers) MarshalText() ([]byte, error) { return []byte(FormatPeers(p)), nil }

// Config configures a controller. Build it with DefaultConfig; New validates it. The prop
// tags are the controller.conf keys (also read from namesrv.conf with
// enableControllerInNamesrv=true); see internal/conf for the tags.
type Config struct {
	SelfID string `prop:"controllerSelfId" help:"this controller's id in controllerPeers"`
	Peers  Peers  `prop:"controllerPeers" help:"every controller's id-host:port of the raft transport, ';'-separated (n0-127.0.0.1:9878;n1-127.0.0.1:9868)"`
	// StorePath holds the raft log (raft.db, bolt) and snapshots; DefaultStorePath when
	// empty at load time.
	StorePath string `prop:"controllerStorePath" help:"directory of the raft log (raft.db) and snapshots (default ~/controller/<controllerSelfId>)"`
	// ListenAddr is the standalone controller's remoting address (cmd/mqcontroller composes
	// it from listenPort and bindAddress); unused when embedded in a name server.
	ListenAddr string
	// AdvertiseAddr is the remoting address other controllers tell callers to use for this
	// one when it leads; empty: the host of its raft address with the remoting port.
	AdvertiseAddr string `prop:"controllerAdvertiseAddr" help:"remoting host:port callers are sent to when this controller leads (default: the raft address's host, the remoting port)"`
	// ElectUncleanMaster lets an election choose a replica outside the SyncStateSet when no
	// member of it is alive (default false: such an election fails, and the group has no
	// master until a member comes back).
	ElectUncleanMaster bool `prop:"enableElectUncleanMaster" default:"false" help:"elect a replica outside the SyncStateSet when none in it is alive (may lose acknowledged messages)"`
	// NotifyBrokerRoleChanged sends NOTIFY_BROKER_ROLE_CHANGED to the group's live replicas
	// after an election.
	NotifyBrokerRoleChanged bool `prop:"notifyBrokerRoleChanged" default:"true" help:"tell a group's live brokers of a new master at once"`
	// ScanNotActiveBrokerInterval is how often the leader looks for replicas whose
	// heartbeats stopped.
	ScanNotActiveBrokerInterval time.Duration `prop:"scanNotActiveBrokerInterval" default:"5000" unit:"ms" help:"how often the leader looks for brokers whose heartbeats stopped"`
	// BrokerHeartbeatTimeout is a replica's lifetime after its last heartbeat unless the
	// heartbeat says otherwise.
	BrokerHeartbeatTimeout time.Duration `prop:"controllerHeartBeatTimeoutMills" default:"10000" unit:"ms" help:"a broker is dead this long after its last heartbeat, unless the heartbeat names its own timeout"`
	// ElectMasterMaxRetryCount bounds the attempts of an election the scan triggers.
	ElectMasterMaxRetryCount int `prop:"electMasterMaxRetryCount" default:"3" help:"attempts of an election the controller triggers"`
	// RaftHeartbeatTimeout, RaftElectionTimeout: hashicorp/raft's timing.
	RaftHeartbeatTimeout time.Duration `prop:"controllerRaftHeartbeatTimeoutMillis" default:"1000" unit:"ms" help:"raft: a follower that hears nothing from the leader this long starts an election"`
	RaftElectionTimeout  time.Duration `prop:"controllerRaftElectionTimeoutMillis" default:"1000" unit:"ms" help:"raft: how long a candidate waits for votes"`
	// NetEngine and NetEventLoops configure the standalone controller's remoting server.
	NetEngine     string `prop:"netEngine" default:"gnet" help:"network engine of the standalone controller: gnet or std"`
	NetEventLoops int    `prop:"netEventLoops" default:"1" help:"event loops of the standalone controller's port"`
}

// DefaultConfig returns RocketMQ 5's defaults; SelfID and Peers must be set.
func DefaultConfig() Config {
	c := Config{ListenAddr: fmt.Sprintf(":%d", DefaultListenPort)}
	conf.SetDefaults(&c)
	return c
}

// DefaultStorePath is ~/controller/<selfID> (RocketMQ keeps DLedger's files under the home
// directory too), or ./controller/<selfID> when the home directory is unknown.
func DefaultStorePath(selfID string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return filepath.Join(home, "controller", selfID)
}

// ParsePeers reads controllerPeers: "id-host:port" entries separated by ';' (a trailing ';'
// and spaces are allowed).
func ParsePeers(s string) (Peers, error) {
	var peers Peers
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
func FormatPeers(peers Peers) string {
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
	if c.NetEngine != "gnet" && c.NetEngine != "std" {
		return fmt.Errorf("%w: netEngine %q: want gnet or std", ErrConfig, c.NetEngine)
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
