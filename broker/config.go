package broker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Config is the broker's whole configuration, keyed by RocketMQ's own property
// names (BrokerConfig, NettyServerConfig, MessageStoreConfig) so that an operator's
// broker.conf starts ringmq unchanged, plus ringmq's own keys.
//
// It is a settings struct (internal/conf): a field's `prop` tag is its key (and --flag),
// `default` its default as the file writes it (no tag: the zero value), `unit` how a number
// in the file maps to a time.Duration (Java keeps milliseconds, hours for fileReservedTime),
// `help` what it means; --help, -p and Set all come from these tags. The store's keys are the
// embedded store.Config's fields and the replication keys the embedded ha.Settings', so one
// key sets the store's or the HA field directly and each default is written once, next to its
// field. Settings of those structs that no key sets are derived when the broker starts:
// store.Config.StoreHost (brokerIP1:listenPort) and store.Config.Slave (brokerRole=SLAVE),
// see storeConfig.
//
// Defaults that depend on other keys keep a sentinel default and are resolved by New:
// brokerName (the host name, set by DefaultConfig), brokerIP1 (the first non-loopback IPv4
// address), brokerIP2 (brokerIP1), haListenPort 0 (listenPort + 1), fastListenPort -1
// (listenPort - 2), the store paths (under storePathRootDir), flushBackend (by append mode),
// netEventLoops 0 (GOMAXPROCS), aclFile (mqbroker: beside the -c file), tlsServerMode (from
// tlsEnable).
//
// Sources, lowest priority first: DefaultConfig, the -c file, command-line flags.
type Config struct {
	// BrokerConfig
	BrokerClusterName           string        `prop:"brokerClusterName" default:"DefaultCluster" help:"cluster this broker registers in with the name servers"`
	BrokerName                  string        `prop:"brokerName" help:"name a master and its slaves share; default: this host's name"`
	BrokerID                    int64         `prop:"brokerId" help:"0 for a master (forced to 0 at start when brokerRole is a master role); a SLAVE needs an id > 0"`
	BrokerIP1                   string        `prop:"brokerIP1" help:"IP address registered with the name servers and written into message ids; empty: the first non-loopback IPv4 address"`
	BrokerIP2                   string        `prop:"brokerIP2" help:"host of the HA address (haServerAddr) registered with name servers; empty: brokerIP1"`
	NamesrvAddr                 string        `prop:"namesrvAddr" help:"name server addresses, host:port separated by ';' (the embedded one is added)"`
	ListenPort                  int           `prop:"listenPort" default:"10911" help:"port clients and admin tools connect to (0: a free port)"`
	BrokerPermission            int           `prop:"brokerPermission" default:"6" help:"what clients may do here: 4 read, 2 write, 6 both"`
	DefaultTopicQueueNums       int           `prop:"defaultTopicQueueNums" default:"8" help:"queues of a topic created by autoCreateTopicEnable (1..1024)"`
	AutoCreateTopicEnable       bool          `prop:"autoCreateTopicEnable" default:"true" help:"create a topic on its first send"`
	AutoCreateSubscriptionGroup bool          `prop:"autoCreateSubscriptionGroup" default:"true" help:"create a consumer group on its first use"`
	ClusterTopicEnable          bool          `prop:"clusterTopicEnable" default:"true" help:"create a topic named brokerClusterName, routed to this cluster"`
	BrokerTopicEnable           bool          `prop:"brokerTopicEnable" default:"true" help:"create a topic named brokerName, routed to this broker"`
	RejectTransactionMessage    bool          `prop:"rejectTransactionMessage" help:"refuse transactional (half) messages"`
	FlushConsumerOffsetInterval time.Duration `prop:"flushConsumerOffsetInterval" unit:"ms" default:"5000" help:"how often consumer offsets are written to consumerOffset.json"`
	BrokerFastFailureEnable     bool          `prop:"brokerFastFailureEnable" default:"true" help:"accepted, not used: ringmq always answers SYSTEM_BUSY at once when its bounded queues are full"`
	WaitTimeMillsInSendQueue    time.Duration `prop:"waitTimeMillsInSendQueue" unit:"ms" default:"200" help:"accepted, not used: sends do not queue for a thread in ringmq"`
	WaitTimeMillsInPullQueue    time.Duration `prop:"waitTimeMillsInPullQueue" unit:"ms" default:"5000" help:"a pull waiting longer for a disk-read worker is answered SYSTEM_BUSY"`
	LongPollingEnable           bool          `prop:"longPollingEnable" default:"true" help:"a pull that finds no message waits for one, up to the client's suspend time"`
	ShortPollingTimeMills       time.Duration `prop:"shortPollingTimeMills" unit:"ms" default:"1000" help:"longPollingEnable=false: how long a pull that finds no message waits"`
	RegisterNameServerPeriod    time.Duration `prop:"registerNameServerPeriod" unit:"ms" default:"30000" help:"how often the broker registers with every name server"`
	RegisterBrokerTimeoutMills  time.Duration `prop:"registerBrokerTimeoutMills" unit:"ms" default:"24000" help:"timeout of one registration with a name server"`
	TransactionTimeOut          time.Duration `prop:"transactionTimeOut" unit:"ms" default:"6000" help:"a half message older than this is checked back with its producer"`
	TransactionCheckMax         int           `prop:"transactionCheckMax" default:"15" help:"check-backs of a half message before it is given up"`
	TransactionCheckInterval    time.Duration `prop:"transactionCheckInterval" unit:"ms" default:"60000" help:"how often half messages are checked back"`
	AclEnable                   bool          `prop:"aclEnable" help:"check every request against the plain ACL file (aclFile)"`
	SlaveReadEnable             bool          `prop:"slaveReadEnable" help:"send consumers to a slave when the messages they pull are no longer in the master's memory"`
	OffsetCheckInSlave          bool          `prop:"offsetCheckInSlave" help:"let a slave answer PULL_OFFSET_MOVED and correct offsets (default: keep the offset, PULL_RETRY_IMMEDIATELY)"`
	TraceTopicEnable            bool          `prop:"traceTopicEnable" help:"create the message trace topic msgTraceTopicName"`
	MsgTraceTopicName           string        `prop:"msgTraceTopicName" default:"RMQ_SYS_TRACE_TOPIC" help:"topic message traces are sent to"`
	MaxReconsumeTimesDefault    int           `prop:"maxReconsumeTimes" default:"16" help:"accepted, not used: a consumer group's retryMaxTimes (16 unless set) bounds redeliveries"`
	NotifyConsumerIdsChanged    bool          `prop:"notifyConsumerIdsChangedEnable" default:"true" help:"tell a group's consumers when one joins or leaves, so they rebalance at once"`
	MessageDelayLevel           string        `prop:"messageDelayLevel" default:"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h" help:"delay of each delay level from 1, blank-separated, units s, m, h, d"`
	DefaultQueryMaxNum          int           `prop:"defaultQueryMaxNum" default:"32" help:"messages a query by unique key (message id) returns at most"`
	ChannelExpiredTimeout       time.Duration `prop:"channelExpiredTimeout" unit:"ms" default:"120000" help:"a client silent (no heartbeat) this long is dropped"`
	CheckTransactionMessage     bool          `prop:"checkTransactionMessageEnable" default:"true" help:"check half messages back with their producers"`

	// MessageStoreConfig: the store's keys (storePathRootDir, mappedFileSizeCommitLog,
	// flushDiskType, ...), and two MessageStoreConfig keys the store does not need.
	store.Config
	FlushCommitLogTimed               bool          `prop:"flushCommitLogTimed" help:"accepted, not used: the ASYNC_FLUSH loop runs every flushIntervalCommitLog and when woken"`
	DestroyMappedFileIntervalForcibly time.Duration `prop:"destroyMappedFileIntervalForcibly" unit:"ms" default:"120000" help:"accepted, not used: a deleted file is unmapped when its last reader releases it"`
	BrokerRole                        BrokerRole    `prop:"brokerRole" default:"ASYNC_MASTER" help:"a master serves writes, a SYNC_MASTER's sends also wait for a slave's acknowledgement; a SLAVE replicates its master and refuses writes"`
	// Master-slave replication (PROTOCOL.md §13.6). HAListenPort 0 means listenPort + 1
	// (RocketMQ's BrokerStartup always sets that), or a free port when listenPort is 0 too;
	// New resolves it. The other replication keys are ha.Settings'.
	HAListenPort int `prop:"haListenPort" help:"port of the HA listener slaves replicate from; 0: listenPort + 1 (a free port when listenPort is 0)"`
	ha.Settings
	// FastListenPort is RocketMQ's "fast" (VIP) channel, NettyServerConfig's 5.x name: a second
	// listener serving the same requests as listenPort, which Java slaves fetch topics from
	// (PROTOCOL.md §13.4). -1 means listenPort − 2 (off when that is not a port, or when
	// listenPort is 0: tests pick ports); 0 turns it off. New resolves it.
	FastListenPort int `prop:"fastListenPort" default:"-1" help:"second listener (RocketMQ's fast/VIP port) serving the same requests; -1: listenPort - 2, 0: off. A slave fetches topics from its master's listenPort - 2 unless its own fastListenPort is 0"`

	// SlaveSynchronize's schedule (PROTOCOL.md §13.4; slavesync.go). RocketMQ has no keys for
	// them (BrokerController hard-codes 3 s and 10 s), so neither has ringmq: they are not
	// properties, only tests set them. 0 = the RocketMQ value.
	slaveSyncInitialDelay time.Duration
	slaveSyncInterval     time.Duration

	// ringmq's own keys (DESIGN.md "Config"); the store's (flushBackend, transientStorePoolPinned,
	// warmMappedFileMlock) are in store.Config.
	NetEngine         NetEngine `prop:"netEngine" default:"gnet" help:"network engine: gnet runs event loops, std a goroutine per connection"`
	NetEventLoops     int       `prop:"netEventLoops" help:"gnet event loops; 0: GOMAXPROCS"`
	MetricsAddr       string    `prop:"metricsAddr" default:"127.0.0.1:9106" help:"host:port serving Prometheus /metrics, /debug/pprof/, /healthz and /readyz (METRICS.md); empty or off: none"`
	NamesrvEmbedded   bool      `prop:"namesrvEmbedded" default:"true" help:"run a name server in this process, on namesrvListenPort"`
	NamesrvListenPort int       `prop:"namesrvListenPort" default:"9876" help:"port of the embedded name server"`
	AclFile           string    `prop:"aclFile" help:"plain ACL file (YAML) read when aclEnable=true; empty: plain_acl.yml beside the -c file, else conf/plain_acl.yml"`

	// The label caps keep a topic storm from growing the metrics without bound (METRICS.md): the
	// first topics and group×topic pairs seen get their own series, later ones share one labelled <other>.
	MetricsMaxTopics      int `prop:"metricsMaxTopics" default:"1000" help:"topics with their own metrics series; more share topic=\"<other>\""`
	MetricsMaxGroupTopics int `prop:"metricsMaxGroupTopics" default:"1000" help:"consumer group × topic pairs with their own metrics series; more share group=\"<other>\",topic=\"<other>\""`

	// MaxConnections stays below the usual 20000 open-file limit (netio warns above it).
	MaxConnections int `prop:"maxConnections" default:"10000" help:"client connections open at once; one more is closed at accept (0: no limit)"`
	// RequestBudgetBytes bounds the bytes of large request frames (over 64 KiB) the broker
	// reads and decodes at once, over all connections; a frame that does not fit waits and
	// its connection stops reading meanwhile (netio budget.go).
	RequestBudgetBytes int64 `prop:"requestBudgetBytes" default:"67108864" help:"bytes of requests over 64 KiB read and decoded at once, over all connections; more wait, their connections not read meanwhile"`
	// TLS on listenPort (RocketMQ sets these as JVM properties tls.server.mode,
	// tls.server.certPath, tls.server.keyPath). tlsEnable=true alone means enforcing;
	// tlsServerMode says it explicitly, permissive serving plain and TLS clients on the same
	// port.
	TLSEnable     bool          `prop:"tlsEnable" help:"serve TLS on listenPort (enforcing unless tlsServerMode says otherwise)"`
	TLSServerMode TLSServerMode `prop:"tlsServerMode" help:"TLS on listenPort: permissive serves plain and TLS clients, enforcing TLS only; empty: enforcing with tlsEnable=true, else disabled"`
	TLSCertFile   string        `prop:"tlsCertFile" help:"PEM certificate chain for TLS"`
	TLSKeyFile    string        `prop:"tlsKeyFile" help:"PEM private key for TLS"`
}

// DefaultConfig returns RocketMQ 4.9's defaults (PROTOCOL.md §11) with ringmq's
// choices where RocketMQ has none: the store under ./data, an embedded NameServer. Every
// default is its key's default tag (the store's and HA keys' in their packages); only
// brokerName, the host name, is computed here.
func DefaultConfig() Config {
	var c Config
	conf.SetDefaults(&c)
	c.BrokerName, _ = os.Hostname()
	if c.BrokerName == "" {
		c.BrokerName = "broker-a"
	}
	return c
}

// LegacyAliases maps old spellings operators still carry in their files to the
// current key (RocketMQ renamed "maped" to "mapped" in most keys, not all).
var LegacyAliases = map[string]string{
	"mapedFileSizeCommitLog":            "mappedFileSizeCommitLog",
	"mapedFileSizeConsumeQueue":         "mappedFileSizeConsumeQueue",
	"destroyMapedFileIntervalForcibly":  "destroyMappedFileIntervalForcibly",
	"warmMappedFileEnable":              "warmMapedFileEnable",
	"flushLeastPagesWhenWarmMappedFile": "flushLeastPagesWhenWarmMapedFile",
}

// NotNeededKeys are RocketMQ keys ringmq accepts without using; the value says what
// ringmq does instead. Each is reported once at info level.
var NotNeededKeys = map[string]string{
	"serverWorkerThreads":                    "network work runs on gnet event loops (netEventLoops)",
	"serverSelectorThreads":                  "network work runs on gnet event loops (netEventLoops)",
	"serverCallbackExecutorThreads":          "network work runs on gnet event loops (netEventLoops)",
	"sendMessageThreadPoolNums":              "sends run on the event loops; durability waits are callbacks, not threads",
	"pullMessageThreadPoolNums":              "pulls of hot data run on the event loops; cold reads use a bounded pool sized from GOMAXPROCS",
	"queryMessageThreadPoolNums":             "queries run on a bounded pool sized from GOMAXPROCS",
	"adminBrokerThreadPoolNums":              "admin requests run on a bounded pool sized from GOMAXPROCS",
	"clientManageThreadPoolNums":             "client management runs on the event loops",
	"consumerManageThreadPoolNums":           "consumer management runs on the event loops",
	"heartbeatThreadPoolNums":                "heartbeats run on the event loops",
	"endTransactionThreadPoolNums":           "end-transaction requests run on the event loops",
	"processReplyMessageThreadPoolNums":      "replies run on the event loops",
	"sendThreadPoolQueueCapacity":            "queues between network and disk are bounded inside ringmq",
	"pullThreadPoolQueueCapacity":            "queues between network and disk are bounded inside ringmq",
	"queryThreadPoolQueueCapacity":           "queues between network and disk are bounded inside ringmq",
	"clientManagerThreadPoolQueueCapacity":   "queues between network and disk are bounded inside ringmq",
	"consumerManagerThreadPoolQueueCapacity": "queues between network and disk are bounded inside ringmq",
	"heartbeatThreadPoolQueueCapacity":       "queues between network and disk are bounded inside ringmq",
	"endTransactionPoolQueueCapacity":        "queues between network and disk are bounded inside ringmq",
	"useEpollNativeSelector":                 "gnet always uses epoll on Linux",
	"serverPooledByteBufAllocatorEnable":     "ringmq manages its own buffers",
	"fetchNamesrvAddrByAddressServer":        "name server addresses come from namesrvAddr only",
	"enableDLegerCommitLog":                  "DLedger is not supported; the CommitLog is RocketMQ's classic one",
	"enablePropertyFilter":                   "SQL92 filtering is not supported; TAG filtering is",
	"filterServerNums":                       "filter servers are not supported",
	"rocketmqHome":                           "ringmq needs no ROCKETMQ_HOME",
	"brokerConfigPath":                       "ringmq reads the file given with -c",
	"duplicationEnable":                      "ignored",
	"diskFallRecorded":                       "ignored",
	"enableConsumeQueueExt":                  "the ConsumeQueue extension (SQL92 bitmaps) is not supported",
	"storePathEpochFile":                     "controller mode is not supported",
	"storePathBrokerIdentity":                "controller mode is not supported",
}

// ConfigWarning is something a loader wants the operator to read: an unknown key,
// or a known key ringmq does not use.
type ConfigWarning struct {
	Key     string
	Line    int    // 0 for flags
	Unknown bool   // true: no such key in RocketMQ or ringmq
	Message string // for not-needed keys: what ringmq does instead
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("broker: config")

// Set assigns one property by name (current name or legacy alias). It reports
// known-but-unused keys and unknown keys as warnings rather than errors; a value
// that does not parse, or an enum value that is not one of its spellings, is an error
// naming the key (and the spellings).
func (c *Config) Set(key, value string, line int) (*ConfigWarning, error) {
	if alias, ok := LegacyAliases[key]; ok {
		key = alias
	}
	found, err := conf.Set(c, key, strings.TrimSpace(value))
	if !found {
		if why, ok := NotNeededKeys[key]; ok {
			return &ConfigWarning{Key: key, Line: line, Message: why}, nil
		}
		return &ConfigWarning{Key: key, Line: line, Unknown: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: key %s: %w", ErrConfig, key, err)
	}
	return nil, nil
}

// PropertyNames lists every key the broker reads, in declaration order (the store's and HA
// keys where Config embeds them).
func PropertyNames() []string {
	keys := conf.Keys(Config{})
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return names
}

// PropertyHelp is a line on what a key does (its help tag).
func PropertyHelp(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	return k.Help
}

// PropertyUsage is a key's --help text: PropertyHelp, the unit of a duration and an enum's
// allowed values. mqbroker adds the default.
func PropertyUsage(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	return k.Usage()
}

// Get returns a property's current value as text, in the file's units and spellings.
func (c *Config) Get(key string) (string, bool) {
	return conf.Get(c, key)
}

// NamesrvAddrs splits namesrvAddr on ';' (RocketMQ's separator), dropping blanks.
func (c *Config) NamesrvAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.NamesrvAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Validate checks values that would fail later or silently misbehave.
func (c *Config) Validate() error {
	bad := func(key, why string) error { return fmt.Errorf("%w: key %s: %s", ErrConfig, key, why) }
	switch {
	case c.BrokerName == "":
		return bad("brokerName", "must not be empty")
	case c.ListenPort < 0 || c.ListenPort > 65535:
		return bad("listenPort", "must be 0..65535")
	case c.NamesrvListenPort < 0 || c.NamesrvListenPort > 65535:
		return bad("namesrvListenPort", "must be 0..65535")
	case c.StorePathRootDir == "":
		return bad("storePathRootDir", "must not be empty")
	case c.MappedFileSizeCommitLog < 4096:
		return bad("mappedFileSizeCommitLog", "must be at least 4096")
	case c.MappedFileSizeConsumeQueue < 20:
		return bad("mappedFileSizeConsumeQueue", "must hold at least one 20-byte entry")
	case c.MaxMessageSize <= 0:
		return bad("maxMessageSize", "must be positive")
	case int64(c.MaxMessageSize)+64*1024 > c.MappedFileSizeCommitLog:
		return bad("maxMessageSize", "a maximal message must fit in one CommitLog file (mappedFileSizeCommitLog)")
	case c.DefaultTopicQueueNums <= 0 || c.DefaultTopicQueueNums > 1024:
		return bad("defaultTopicQueueNums", "must be 1..1024")
	case c.TransientStorePoolEnable && c.TransientStorePoolSize <= 0:
		return bad("transientStorePoolSize", "must be positive when transientStorePoolEnable=true")
	case c.NetEventLoops < 0:
		return bad("netEventLoops", "must be 0 (GOMAXPROCS) or positive")
	case c.RequestBudgetBytes <= 0:
		return bad("requestBudgetBytes", "must be positive")
	case c.FastListenPort < -1 || c.FastListenPort > 65535:
		return bad("fastListenPort", "must be -1 (listenPort - 2), 0 (off) or a port")
	case c.MetricsMaxTopics < 0:
		return bad("metricsMaxTopics", "must be 0 or positive")
	case c.MetricsMaxGroupTopics < 0:
		return bad("metricsMaxGroupTopics", "must be 0 or positive")
	}
	if why := c.metricsAddrProblem(); why != "" {
		return bad("metricsAddr", why)
	}
	// The enums (flushDiskType, brokerRole, flushBackend, netEngine, tlsServerMode) were
	// checked when their keys were read (Set); what is left are checks across keys.
	if c.BrokerRole == RoleSlave && c.BrokerID <= 0 {
		// RocketMQ's BrokerStartup exits with status -3 here.
		return bad("brokerId", fmt.Sprintf("%d: a SLAVE needs brokerId > 0 (0 is the master's)", c.BrokerID))
	}
	if err := c.validateHA(); err != nil {
		return err
	}
	if c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95 {
		// RocketMQ clamps to 10..95 silently; keep its behaviour but never silently.
		return bad("diskMaxUsedSpaceRatio", "must be 10..95")
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		return bad("messageDelayLevel", err.Error())
	}
	if c.TLSServerMode == TLSModeDisabled && c.TLSEnable {
		return bad("tlsServerMode", "disabled contradicts tlsEnable=true")
	}
	if c.EffectiveTLSMode() != "disabled" {
		if c.TLSCertFile == "" {
			return bad("tlsCertFile", "must name the PEM certificate when TLS is on")
		}
		if c.TLSKeyFile == "" {
			return bad("tlsKeyFile", "must name the PEM private key when TLS is on")
		}
	}
	return nil
}

// EffectiveTLSMode is the remoting port's TLS mode (netio.TLSDisabled, TLSPermissive or
// TLSEnforcing): tlsServerMode when set, else "enforcing" with tlsEnable=true and "disabled"
// without.
func (c *Config) EffectiveTLSMode() string {
	switch {
	case c.TLSServerMode != TLSModeUnset:
		return c.TLSServerMode.String()
	case c.TLSEnable:
		return netio.TLSEnforcing
	default:
		return netio.TLSDisabled
	}
}

// NetEngine is netEngine, the remoting server's engine (netio.Config.Engine).
type NetEngine uint8

// Network engines.
const (
	NetEngineGnet NetEngine = iota // event loops (gnet)
	NetEngineStd                   // a goroutine per connection (net package)
)

var netEngineNames = []string{netio.EngineGnet, netio.EngineStd}

// String is the netEngine spelling, netio's engine name.
func (e NetEngine) String() string { return enumName(netEngineNames, int(e), "NetEngine") }

// EnumValues lists the netEngine spellings (conf.Enum).
func (NetEngine) EnumValues() []string { return append([]string(nil), netEngineNames...) }

// MarshalText is the netEngine spelling.
func (e NetEngine) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads netEngine: gnet or std.
func (e *NetEngine) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), netEngineNames...)
	if err != nil {
		return err
	}
	*e = NetEngine(i)
	return nil
}

// TLSServerMode is tlsServerMode. Unset (empty in the file) leaves the mode to tlsEnable
// (EffectiveTLSMode).
type TLSServerMode uint8

// TLS server modes, netio's (tls.go).
const (
	TLSModeUnset      TLSServerMode = iota
	TLSModeDisabled                 // plain only
	TLSModePermissive               // plain and TLS clients on the same port
	TLSModeEnforcing                // TLS only
)

var tlsModeNames = []string{"", netio.TLSDisabled, netio.TLSPermissive, netio.TLSEnforcing}

// String is the tlsServerMode spelling (netio's TLS mode), empty when unset.
func (m TLSServerMode) String() string { return enumName(tlsModeNames, int(m), "TLSServerMode") }

// EnumValues lists the tlsServerMode spellings (conf.Enum); empty is also accepted.
func (TLSServerMode) EnumValues() []string { return append([]string(nil), tlsModeNames[1:]...) }

// MarshalText is the tlsServerMode spelling.
func (m TLSServerMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads tlsServerMode: disabled, permissive, enforcing or empty.
func (m *TLSServerMode) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*m = TLSModeUnset
		return nil
	}
	i, err := conf.ParseEnum(string(text), tlsModeNames[1:]...)
	if err != nil {
		return err
	}
	*m = TLSServerMode(i + 1)
	return nil
}

// enumName is names[i], or type(i) for a value with no name.
func enumName(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}

// DefaultAclFile is where the plain ACL file is read from when aclFile is empty (mqbroker
// sets aclFile to plain_acl.yml beside the -c file instead).
const DefaultAclFile = "conf/plain_acl.yml"

// ParseDelayLevels parses messageDelayLevel ("1s 5s 10s 30s 1m ... 2h"; units s, m, h, d).
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("level %q has no unit", f)
		}
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("level %q is not a positive number with a unit", f)
		}
		var unit time.Duration
		switch f[len(f)-1] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		default:
			return nil, fmt.Errorf("level %q: unit must be s, m, h or d", f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	if len(out) == 0 {
		return nil, errors.New("no levels")
	}
	return out, nil
}
