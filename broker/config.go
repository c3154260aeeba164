package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/logging"
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
// embedded store.Config's fields, the replication keys the embedded ha.Settings', the remoting
// server's the embedded netio.ServerSettings' and the logging keys LogSettings', so one key
// sets that package's field directly and each default is written once, next to its field. Settings of those structs that no key sets are derived when the broker starts:
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
	BrokerClusterName           string        `prop:"brokerClusterName" group:"broker" default:"DefaultCluster" help:"cluster this broker registers in with the name servers"`
	BrokerName                  string        `prop:"brokerName" group:"broker" help:"name a master and its slaves share; default: this host's name"`
	BrokerID                    int64         `prop:"brokerId" group:"broker" allowed:"0 for a master, 1 or more for a SLAVE" help:"0 for a master (forced to 0 at start when brokerRole is a master role); a SLAVE needs an id > 0"`
	BrokerIP1                   string        `prop:"brokerIP1" group:"broker" allowed:"empty or an IP address" help:"IP address registered with the name servers and written into message ids; empty: the first non-loopback IPv4 address"`
	BrokerIP2                   string        `prop:"brokerIP2" group:"broker" help:"host of the HA address (haServerAddr) registered with name servers; empty: brokerIP1"`
	NamesrvAddr                 string        `prop:"namesrvAddr" group:"broker" help:"name server addresses, host:port separated by ';' (the embedded one is added)"`
	ListenPort                  int           `prop:"listenPort" group:"network" allowed:"0..65535" default:"10911" help:"port clients and admin tools connect to (0: a free port)"`
	BrokerPermission            int           `prop:"brokerPermission" group:"broker" allowed:"0, 2 (write only), 4 (read only) or 6 (read and write)" default:"6" help:"what clients may do here: sends need write (2), pulls read (4); 4 drains a broker's writes"`
	DefaultTopicQueueNums       int           `prop:"defaultTopicQueueNums" group:"messages" allowed:"1..1024" default:"8" help:"queues of a topic created by autoCreateTopicEnable"`
	AutoCreateTopicEnable       bool          `prop:"autoCreateTopicEnable" group:"messages" default:"true" help:"create a topic on its first send"`
	AutoCreateSubscriptionGroup bool          `prop:"autoCreateSubscriptionGroup" group:"messages" default:"true" help:"create a consumer group on its first use"`
	ClusterTopicEnable          bool          `prop:"clusterTopicEnable" group:"messages" default:"true" help:"create a topic named brokerClusterName, routed to this cluster"`
	BrokerTopicEnable           bool          `prop:"brokerTopicEnable" group:"messages" default:"true" help:"create a topic named brokerName, routed to this broker"`
	RejectTransactionMessage    bool          `prop:"rejectTransactionMessage" group:"messages" help:"refuse transactional (half) messages"`
	FlushConsumerOffsetInterval time.Duration `prop:"flushConsumerOffsetInterval" group:"messages" unit:"ms" default:"5000" help:"how often consumer offsets are written to consumerOffset.json"`
	BrokerFastFailureEnable     bool          `prop:"brokerFastFailureEnable" group:"limits" default:"true" help:"accepted, not used: ringmq always answers SYSTEM_BUSY at once when its bounded queues are full"`
	WaitTimeMillsInSendQueue    time.Duration `prop:"waitTimeMillsInSendQueue" group:"limits" unit:"ms" default:"200" help:"accepted, not used: sends do not queue for a thread in ringmq"`
	WaitTimeMillsInPullQueue    time.Duration `prop:"waitTimeMillsInPullQueue" group:"limits" unit:"ms" default:"5000" help:"a pull waiting longer for a disk-read worker is answered SYSTEM_BUSY"`
	LongPollingEnable           bool          `prop:"longPollingEnable" group:"messages" default:"true" help:"a pull that finds no message waits for one, up to the client's suspend time"`
	ShortPollingTimeMills       time.Duration `prop:"shortPollingTimeMills" group:"messages" unit:"ms" default:"1000" help:"longPollingEnable=false: how long a pull that finds no message waits"`
	EnablePropertyFilter        bool          `prop:"enablePropertyFilter" group:"messages" help:"serve SQL92 subscriptions (MessageSelector.bySql): filtered on the messages' properties at pull time; off, SQL92 consumers are refused as by RocketMQ"`
	RegisterNameServerPeriod    time.Duration `prop:"registerNameServerPeriod" group:"broker" unit:"ms" default:"30000" help:"how often the broker registers with every name server"`
	RegisterBrokerTimeoutMills  time.Duration `prop:"registerBrokerTimeoutMills" group:"broker" unit:"ms" default:"24000" help:"timeout of one registration with a name server"`
	TransactionTimeOut          time.Duration `prop:"transactionTimeOut" group:"messages" unit:"ms" default:"6000" help:"a half message older than this is checked back with its producer"`
	TransactionCheckMax         int           `prop:"transactionCheckMax" group:"messages" default:"15" help:"check-backs of a half message before it is given up"`
	TransactionCheckInterval    time.Duration `prop:"transactionCheckInterval" group:"messages" unit:"ms" default:"60000" help:"how often half messages are checked back"`
	AclEnable                   bool          `prop:"aclEnable" group:"ACL/TLS" help:"check every request against the plain ACL file (aclFile)"`
	SlaveReadEnable             bool          `prop:"slaveReadEnable" group:"HA" help:"send consumers to a slave when the messages they pull are no longer in the master's memory"`
	OffsetCheckInSlave          bool          `prop:"offsetCheckInSlave" group:"HA" help:"let a slave answer PULL_OFFSET_MOVED and correct offsets (default: keep the offset, PULL_RETRY_IMMEDIATELY)"`
	TraceTopicEnable            bool          `prop:"traceTopicEnable" group:"messages" help:"create the message trace topic msgTraceTopicName"`
	MsgTraceTopicName           string        `prop:"msgTraceTopicName" group:"messages" default:"RMQ_SYS_TRACE_TOPIC" help:"topic message traces are sent to"`
	MaxReconsumeTimesDefault    int           `prop:"maxReconsumeTimes" group:"messages" default:"16" help:"accepted, not used: a consumer group's retryMaxTimes (16 unless set) bounds redeliveries"`
	NotifyConsumerIdsChanged    bool          `prop:"notifyConsumerIdsChangedEnable" group:"messages" default:"true" help:"tell a group's consumers when one joins or leaves, so they rebalance at once"`
	MessageDelayLevel           string        `prop:"messageDelayLevel" group:"messages" allowed:"blank-separated positive numbers with a unit s, m, h or d" default:"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h" help:"delay of each delay level, from level 1 on"`
	DefaultQueryMaxNum          int           `prop:"defaultQueryMaxNum" group:"messages" default:"32" help:"messages a query by unique key (message id) returns at most"`
	ChannelExpiredTimeout       time.Duration `prop:"channelExpiredTimeout" group:"network" unit:"ms" default:"120000" help:"a client silent (no heartbeat) this long is dropped"`
	CheckTransactionMessage     bool          `prop:"checkTransactionMessageEnable" group:"messages" default:"true" help:"check half messages back with their producers"`
	// RocketmqVersion is the MQVersion this process reports (codec.SetServerVersion; New sets it).
	RocketmqVersion codec.MQVersion `prop:"rocketmqVersion" group:"broker" allowed:"a RocketMQ version name, V4_0_0 .. V5_9_9" default:"V4_9_8" help:"RocketMQ version the broker reports: the version field of every request and response, brokerVersion in brokerStatus (clusterList's version column), the version of its registrations with name servers"`

	// Bounds on what clients create implicitly (broker/metadata/limits.go).
	AutoCreateSubscriptionGroupLimit int `prop:"autoCreateSubscriptionGroupLimit" group:"limits" allowed:"1 or more" default:"10000" help:"consumer groups created on first use (heartbeat, pull, send-back) stop at this many, built-in groups aside: later ones are refused SUBSCRIPTION_GROUP_NOT_EXIST; updateSubGroup is not limited"`
	AutoCreateRetryTopicLimit        int `prop:"autoCreateRetryTopicLimit" group:"limits" allowed:"1 or more" default:"20000" help:"retry (%RETRY%) and dead-letter (%DLQ%) topics created implicitly (heartbeat, send-back, send) stop at this many: later ones are refused; updateTopic is not limited"`

	// MessageStoreConfig: the store's keys (storePathRootDir, mappedFileSizeCommitLog,
	// flushDiskType, ...), and two MessageStoreConfig keys the store does not need.
	store.Config
	FlushCommitLogTimed               bool          `prop:"flushCommitLogTimed" group:"flush" help:"accepted, not used: the ASYNC_FLUSH loop runs every flushIntervalCommitLog and when woken"`
	DestroyMappedFileIntervalForcibly time.Duration `prop:"destroyMappedFileIntervalForcibly" group:"store" unit:"ms" default:"120000" help:"accepted, not used: a deleted file is unmapped when its last reader releases it"`
	BrokerRole                        BrokerRole    `prop:"brokerRole" group:"HA" default:"ASYNC_MASTER" help:"a master serves writes, a SYNC_MASTER's sends also wait for a slave's acknowledgement; a SLAVE replicates its master and refuses writes"`
	// Master-slave replication (PROTOCOL.md §13.6). HAListenPort 0 means listenPort + 1
	// (RocketMQ's BrokerStartup always sets that), or a free port when listenPort is 0 too;
	// New resolves it. The other replication keys are ha.Settings'.
	HAListenPort int `prop:"haListenPort" group:"HA" allowed:"0..65535, not listenPort" help:"port of the HA listener slaves replicate from; 0: listenPort + 1 (a free port when listenPort is 0)"`
	ha.Settings
	// Controller mode (RocketMQ 5's keys; broker/controlled runs it): the role comes from the
	// controller, not from brokerRole.
	ControllerSettings
	// FastListenPort is RocketMQ's "fast" (VIP) channel, NettyServerConfig's 5.x name: a second
	// listener serving the same requests as listenPort, which Java slaves fetch topics from
	// (PROTOCOL.md §13.4). -1 means listenPort − 2 (off when that is not a port, or when
	// listenPort is 0: tests pick ports); 0 turns it off. New resolves it.
	FastListenPort int `prop:"fastListenPort" group:"network" allowed:"-1, 0 or a port 1..65535" default:"-1" help:"second listener (RocketMQ's fast/VIP port) serving the same requests; -1: listenPort - 2, 0: off. A slave fetches topics from its master's listenPort - 2 unless its own fastListenPort is 0"`

	// SlaveSynchronize's schedule (PROTOCOL.md §13.4; slavesync.go). RocketMQ has no keys for
	// them (BrokerController hard-codes 3 s and 10 s), so neither has ringmq: they are not
	// properties, only tests set them. 0 = the RocketMQ value.
	slaveSyncInitialDelay time.Duration
	slaveSyncInterval     time.Duration

	// ringmq's own keys (DESIGN.md "Config"); the store's (flushBackend, transientStorePoolPinned,
	// transientStorePoolDir, warmMappedFileMlock) are in store.Config.
	MetricsAddr       string `prop:"metricsAddr" group:"metrics/ops" default:"127.0.0.1:9106" help:"host:port serving Prometheus /metrics, /debug/pprof/ and the probes /livez (alias /healthz) and /readyz (METRICS.md); empty or off: none"`
	NamesrvEmbedded   bool   `prop:"namesrvEmbedded" group:"network" default:"true" help:"run a name server in this process, on namesrvListenPort"`
	NamesrvListenPort int    `prop:"namesrvListenPort" group:"network" allowed:"0..65535" default:"9876" help:"port of the embedded name server"`
	AclFile           string `prop:"aclFile" group:"ACL/TLS" help:"plain ACL file (YAML) read when aclEnable=true; empty: plain_acl.yml beside the -c file, else conf/plain_acl.yml"`

	// HiccupMeterInterval runs internal/hiccup in mqbroker: a diagnostic for tail-latency work (issue 17).
	HiccupMeterInterval time.Duration `prop:"hiccupMeterInterval" group:"metrics/ops" unit:"ms" allowed:"0 or more" default:"0" help:"> 0: a goroutine sleeps this long over and over and records how late it wakes (ringmq_hiccup_seconds; stalls of 1 ms or more with their times at /debug/hiccups on metricsAddr); 0: off"`

	// The label caps keep a topic storm from growing the metrics without bound (METRICS.md): the
	// first topics and group×topic pairs seen get their own series, later ones share one labelled <other>.
	MetricsMaxTopics      int `prop:"metricsMaxTopics" group:"metrics/ops" allowed:"0 or more" default:"1000" help:"topics with their own metrics series; more share topic=\"<other>\""`
	MetricsMaxGroupTopics int `prop:"metricsMaxGroupTopics" group:"metrics/ops" allowed:"0 or more" default:"1000" help:"consumer group × topic pairs with their own metrics series; more share group=\"<other>\",topic=\"<other>\""`

	// The remoting server's keys (netEngine, netEventLoops, maxConnections,
	// requestBudgetBytes, TLS): netio's.
	netio.ServerSettings

	// The logging keys (logFormat, logLevel, logFile and its rotation); mqbroker builds the
	// logger from them.
	LogSettings

	// rocketMQValues are the values given to RocketMQ keys ringmq has no setting for (shown by
	// GET_BROKER_CONFIG, config_rocketmq.go); copied on write, never changed in place.
	rocketMQValues map[string]string
}

// LogSettings are the logging keys (internal/logging), embedded in Config under this name
// because ha.Settings is embedded too.
type LogSettings = logging.Settings

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
	"rocketmqHome":                           "ringmq needs no ROCKETMQ_HOME",
	"brokerConfigPath":                       "ringmq reads the file given with -c",
	"duplicationEnable":                      "ignored",
	"diskFallRecorded":                       "ignored",
	"storePathEpochFile":                     "the epoch file is epochFileCheckpoint in storePathRootDir",
	"storePathBrokerIdentity":                "the controller's brokerId is kept in controllerBrokerId in storePathRootDir",
}

// RefusedKeys are switches of RocketMQ features ringmq does not implement (RocketMQ 4.x and
// 5.x BrokerConfig and MessageStoreConfig). Set refuses a value that turns the feature on:
// a broker that started anyway would silently lack what the operator asked for. The value
// that leaves the feature off (the Off of each) is accepted and changes nothing.
var RefusedKeys = map[string]RefusedKey{
	"enableDLegerCommitLog":           {Feature: "the DLedger (Raft) CommitLog; ringmq replicates master to slave (brokerRole)", Off: "false"},
	"enableSlaveActingMaster":         {Feature: "5.x slave acting master", Off: "false"},
	"enableRemoteEscape":              {Feature: "5.x remote escape (sending through another broker when this one fails)", Off: "false"},
	"enableCalcFilterBitMap":          {Feature: "SQL92 filter bitmaps (a bloom-filter pre-check kept in the ConsumeQueue extension); SQL92 filtering itself works with enablePropertyFilter=true, evaluating each pulled message", Off: "false"},
	"filterSupportRetry":              {Feature: "re-evaluating SQL92 expressions on retried messages (by default, as in RocketMQ, a message redelivered from %RETRY% is not filtered again)", Off: "false"},
	"enableConsumeQueueExt":           {Feature: "the ConsumeQueue extension (SQL92 filter bitmaps); SQL92 filtering itself works with enablePropertyFilter=true", Off: "false"},
	"filterServerNums":                {Feature: "filter servers", Off: "0"},
	"fetchNamesrvAddrByAddressServer": {Feature: "name server addresses from an address server (set namesrvAddr)", Off: "false"},
	"enableLmq":                       {Feature: "light message queues (LMQ)", Off: "false"},
	"enableMultiDispatch":             {Feature: "multi-dispatch to light message queues", Off: "false"},
	"timerWheelEnable":                {Feature: "5.x timer messages (arbitrary delivery time; delay levels are supported)", Off: "false"},
	"storeType":                       {Feature: "store types other than RocketMQ's default file store (RocksDB)", Off: "default"},
	"messageStorePlugIn":              {Feature: "message store plug-ins (tiered storage)", Off: ""},
}

// ControllerSettings are controller mode's broker keys, RocketMQ 5's names and defaults where it has
// them.
type ControllerSettings struct {
	EnableControllerMode            bool          `prop:"enableControllerMode" group:"HA" help:"the role comes from the controller (controllerAddr), which elects a new master from the in-sync replicas when one dies; brokerRole and brokerId are then ignored"`
	ControllerAddr                  string        `prop:"controllerAddr" group:"HA" allowed:"host:port;host:port..." help:"the controllers, or the name servers that embed them (enableControllerInNamesrv), ';'-separated"`
	MinInSyncReplicas               int           `prop:"minInSyncReplicas" group:"HA" allowed:"1 or more" default:"1" help:"a master refuses sends (SLAVE_NOT_AVAILABLE) while fewer replicas, itself included, are in its SyncStateSet"`
	HAMaxTimeSlaveNotCatchup        time.Duration `prop:"haMaxTimeSlaveNotCatchup" group:"HA" allowed:"1 or more" unit:"ms" default:"15000" help:"a replica that has not caught up with the master for this long leaves the SyncStateSet"`
	BrokerHeartbeatInterval         time.Duration `prop:"brokerHeartbeatInterval" group:"HA" allowed:"1 or more" unit:"ms" default:"1000" help:"how often a broker heartbeats to the controller (and looks for role changes)"`
	ControllerHeartBeatTimeoutMills time.Duration `prop:"controllerHeartBeatTimeoutMills" group:"HA" allowed:"more than brokerHeartbeatInterval" unit:"ms" default:"10000" help:"the controller takes a broker for dead after this long without its heartbeat (at once when its connection closes)"`
}

// RefusedKey is a RefusedKeys entry: the feature, and the one value that keeps it off.
type RefusedKey struct {
	Feature string
	Off     string
}

// enables reports whether value turns the feature on: anything but the off value, compared
// as RocketMQ reads the key (a boolean without case, a number as a number).
func (r RefusedKey) enables(value string) bool {
	if b, err := strconv.ParseBool(r.Off); err == nil {
		v, err := strconv.ParseBool(value)
		return err != nil || v != b
	}
	if n, err := strconv.Atoi(r.Off); err == nil {
		v, err := strconv.Atoi(value)
		return err != nil || v != n
	}
	return value != r.Off
}

// ConfigWarning is something a loader wants the operator to read about a key it accepted: a
// RocketMQ key ringmq does not need (NotNeededKeys: Message says what ringmq does instead), or an
// Apache RocketMQ 4.x key ringmq does not read at all (Ignored).
type ConfigWarning struct {
	Key     string
	Line    int  // 0 for flags
	Ignored bool // true: an Apache RocketMQ 4.x key ringmq does not read; its value has no effect
	Message string
}

// ignoredMessage is ConfigWarning.Message for a RocketMQ key ringmq does not read.
const ignoredMessage = "an Apache RocketMQ 4.x key ringmq does not read; its value has no effect"

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("broker: config")

// Set assigns one property by name (current name or legacy alias). A RocketMQ key that ringmq
// accepts without using (NotNeededKeys) or does not read (the rest of Apache RocketMQ 4.9's
// broker keys, conf.RocketMQBrokerKeys) is a warning naming it. An error wraps ErrConfig and
// says why: a key neither ringmq nor RocketMQ knows (a *conf.UnknownKeyError naming the nearest
// known key: a typo must not leave its key at the default), or a *conf.ValueError (key, value,
// allowed values) for a value that does not parse, an enum value that is not one of its
// spellings, or a value turning on a feature ringmq does not have (RefusedKeys).
func (c *Config) Set(key, value string, line int) (*ConfigWarning, error) {
	if alias, ok := LegacyAliases[key]; ok {
		key = alias
	}
	value = strings.TrimSpace(value)
	found, err := conf.Set(c, key, value)
	if !found {
		if r, ok := RefusedKeys[key]; ok {
			if r.enables(value) {
				return nil, fmt.Errorf("%w: %w", ErrConfig, &conf.ValueError{Key: key, Value: value,
					Problem: "ringmq does not implement " + r.Feature, Allowed: strconv.Quote(r.Off) + " or no such line"})
			}
			c.keepRocketMQValue(key, value)
			return nil, nil
		}
		if why, ok := NotNeededKeys[key]; ok {
			c.keepRocketMQValue(key, value)
			return &ConfigWarning{Key: key, Line: line, Message: why}, nil
		}
		kind, err := brokerVocabulary().Check(key)
		if kind == conf.KeyRocketMQOnly {
			c.keepRocketMQValue(key, value)
			return &ConfigWarning{Key: key, Line: line, Ignored: true, Message: ignoredMessage}, nil
		}
		if err == nil { // a key of the vocabulary Set has no field for: a programmer error
			panic("broker: key " + key + " is known but has no setting")
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil, nil
}

// brokerVocabulary is every key mqbroker knows: the keys it reads, the RocketMQ keys it accepts
// on purpose (NotNeededKeys, RefusedKeys, LegacyAliases), then Apache RocketMQ 4.9's broker keys.
var brokerVocabulary = sync.OnceValue(func() conf.Vocabulary {
	own := PropertyNames()
	var more []string
	for _, m := range []map[string]string{NotNeededKeys, LegacyAliases} {
		for k := range m {
			more = append(more, k)
		}
	}
	for k := range RefusedKeys {
		more = append(more, k)
	}
	slices.Sort(more) // map order would break Suggest's ties differently from run to run
	return conf.Vocabulary{Own: append(own, more...), RocketMQ: conf.RocketMQBrokerKeys()}
})

// SuggestKey is the known key nearest to an unknown one (conf.Suggest over brokerVocabulary),
// or "".
func SuggestKey(unknown string) string {
	v := brokerVocabulary()
	return conf.Suggest(unknown, append(append([]string(nil), v.Own...), v.RocketMQ...))
}

// AcceptedRocketMQKeys lists the keys Set accepts that are not PropertyNames: the RocketMQ keys ringmq
// accepts on purpose without reading them (NotNeededKeys, RefusedKeys with their off value,
// LegacyAliases) and the ones it ignores (RocketMQOnlyKeys). Sorted.
func AcceptedRocketMQKeys() []string {
	v := brokerVocabulary()
	out := append(append([]string(nil), v.Own[len(PropertyNames()):]...), RocketMQOnlyKeys()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// RocketMQOnlyKeys lists the Apache RocketMQ 4.9 broker keys ringmq neither reads nor accepts on
// purpose: Set answers each with an Ignored warning. Sorted.
func RocketMQOnlyKeys() []string {
	v := brokerVocabulary()
	var out []string
	for _, k := range v.RocketMQ {
		if !slices.Contains(v.Own, k) {
			out = append(out, k)
		}
	}
	return out
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

// KeyGroups are the sections of --help, in order; every key's group tag names one of them.
var KeyGroups = []string{"broker", "network", "store", "flush", "HA", "messages", "ACL/TLS", "limits",
	"metrics/ops", "logging"}

// PropertyGroup is the --help section of a key (its group tag).
func PropertyGroup(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	return k.Group
}

// PropertyKind is what a key's value is, for --help: "bool", "int", "enum", "text", or a
// duration's unit ("ms", "s", "hours").
func PropertyKind(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	if k.Kind == "duration" {
		switch k.Unit {
		case "h":
			return "hours"
		case "s":
			return "s"
		}
		return "ms"
	}
	return k.Kind
}

// PropertyHelp is a line on what a key does (its help tag).
func PropertyHelp(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	return k.Help
}

// PropertyUsage is a key's --help text: PropertyHelp, the unit of a duration and an enum's
// allowed values, and whether it changes at run time (LiveKeys). mqbroker adds the default.
func PropertyUsage(key string) string {
	k, _ := conf.Lookup(Config{}, key)
	if liveKeys[key] != nil {
		return k.Usage() + " (changes at run time: mqadmin updateBrokerConfig)"
	}
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

// Validate checks every key as a start would, the store's and the logging keys included, so
// that mqbroker -p refuses what a start refuses. The error wraps ErrConfig and a
// *conf.ValueError naming the key, its value and the allowed values.
func (c *Config) Validate() error {
	err := c.validate()
	var ve *conf.ValueError
	if errors.As(err, &ve) {
		// The store prints values with fmt (500ms); the file writes them in its units (500).
		if v, ok := c.Get(ve.Key); ok {
			ve.Value = v
		}
	}
	return err
}

func (c *Config) validate() error {
	bad := func(key, problem string) error {
		return fmt.Errorf("%w: %w", ErrConfig, conf.Invalid(c, key, problem, ""))
	}
	switch {
	case c.BrokerName == "":
		return bad("brokerName", "must not be empty")
	case !c.RocketmqVersion.Valid():
		return bad("rocketmqVersion", "")
	case c.ListenPort < 0 || c.ListenPort > 65535:
		return bad("listenPort", "")
	case c.NamesrvListenPort < 0 || c.NamesrvListenPort > 65535:
		return bad("namesrvListenPort", "")
	case c.StorePathRootDir == "":
		return bad("storePathRootDir", "must not be empty")
	case c.MappedFileSizeCommitLog < 4096:
		return bad("mappedFileSizeCommitLog", "")
	case c.MappedFileSizeConsumeQueue < 20:
		return bad("mappedFileSizeConsumeQueue", "must hold at least one 20-byte entry")
	case c.MaxMessageSize <= 0:
		return bad("maxMessageSize", "")
	case int64(c.MaxMessageSize)+64*1024 > c.MappedFileSizeCommitLog:
		return bad("maxMessageSize", fmt.Sprintf("a maximal message must fit in one CommitLog file (mappedFileSizeCommitLog=%d)",
			c.MappedFileSizeCommitLog))
	case c.BrokerPermission&^6 != 0: // RocketMQ's PermName read (4) and write (2) bits only
		return bad("brokerPermission", "")
	case c.DefaultTopicQueueNums <= 0 || c.DefaultTopicQueueNums > 1024:
		return bad("defaultTopicQueueNums", "")
	case c.AutoCreateSubscriptionGroupLimit < 1:
		return bad("autoCreateSubscriptionGroupLimit", "")
	case c.AutoCreateRetryTopicLimit < 1:
		return bad("autoCreateRetryTopicLimit", "")
	case c.TransientStorePoolEnable && c.TransientStorePoolSize <= 0:
		return bad("transientStorePoolSize", "must be positive when transientStorePoolEnable=true")
	case c.FastListenPort < -1 || c.FastListenPort > 65535:
		return bad("fastListenPort", "")
	case c.MetricsMaxTopics < 0:
		return bad("metricsMaxTopics", "")
	case c.MetricsMaxGroupTopics < 0:
		return bad("metricsMaxGroupTopics", "")
	case c.HiccupMeterInterval < 0:
		return bad("hiccupMeterInterval", "")
	case c.HiccupMeterInterval > 0 && c.MetricsListenAddr() == "":
		return bad("hiccupMeterInterval", "needs metricsAddr (the meter reports there)")
	}
	if why := c.metricsAddrProblem(); why != "" {
		return bad("metricsAddr", why)
	}
	if c.BrokerIP1 != "" {
		if _, err := netip.ParseAddr(c.BrokerIP1); err != nil {
			return bad("brokerIP1", "not an IP address")
		}
	}
	// The enums (flushDiskType, brokerRole, flushBackend, netEngine, tlsServerMode, logFormat,
	// logLevel) were checked when their keys were read (Set); what is left are checks across keys.
	if c.BrokerRole == RoleSlave && c.BrokerID <= 0 {
		// RocketMQ's BrokerStartup exits with status -3 here.
		return bad("brokerId", "a SLAVE needs brokerId > 0 (0 is the master's)")
	}
	if err := c.validateHA(); err != nil {
		return err
	}
	if c.EnableControllerMode {
		switch {
		case strings.TrimSpace(c.ControllerAddr) == "":
			return bad("controllerAddr", "enableControllerMode=true needs the controllers' addresses")
		case c.MinInSyncReplicas < 1:
			return bad("minInSyncReplicas", "")
		case c.HAMaxTimeSlaveNotCatchup <= 0:
			return bad("haMaxTimeSlaveNotCatchup", "")
		case c.BrokerHeartbeatInterval <= 0:
			return bad("brokerHeartbeatInterval", "")
		case c.ControllerHeartBeatTimeoutMills <= c.BrokerHeartbeatInterval:
			return bad("controllerHeartBeatTimeoutMills", "must exceed brokerHeartbeatInterval")
		case c.NamesrvEmbedded:
			return bad("namesrvEmbedded", "a broker in controller mode registers with the name servers of namesrvAddr (those of its controllers, or others); set namesrvEmbedded=false")
		}
	}
	if c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95 {
		// RocketMQ clamps to 10..95 silently; keep its behaviour but never silently.
		return bad("diskMaxUsedSpaceRatio", "")
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		return bad("messageDelayLevel", err.Error())
	}
	if err := c.ServerSettings.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.LogSettings.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// The store's own checks, on the configuration the broker will open it with (the address
	// written into records is resolved later; its default stands in), so that -p and a start
	// refuse the same values.
	if _, err := storeConfig(c, store.DefaultConfig(c.StorePathRootDir).StoreHost); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
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
