package broker

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/netio"
)

// Config is the broker's whole configuration, keyed by RocketMQ's own property
// names (BrokerConfig, NettyServerConfig, MessageStoreConfig) so that an operator's
// broker.conf starts ringmq unchanged, plus ringmq's own keys. The `prop` tag is the
// property name (and the --flag name); `unit` says how a number in the file maps to
// a time.Duration (Java keeps milliseconds, hours for fileReservedTime).
//
// Sources, lowest priority first: DefaultConfig, the -c file, command-line flags.
type Config struct {
	// BrokerConfig
	BrokerClusterName            string        `prop:"brokerClusterName"`
	BrokerName                   string        `prop:"brokerName"`
	BrokerID                     int64         `prop:"brokerId" help:"0 for a master (forced to 0 at start when brokerRole is a master role); a SLAVE needs an id > 0"`
	BrokerIP1                    string        `prop:"brokerIP1"`
	BrokerIP2                    string        `prop:"brokerIP2" help:"host of the HA address (haServerAddr) registered with name servers; empty: brokerIP1"`
	NamesrvAddr                  string        `prop:"namesrvAddr"` // ';'-separated
	ListenPort                   int           `prop:"listenPort"`
	BrokerPermission             int           `prop:"brokerPermission"`
	DefaultTopicQueueNums        int           `prop:"defaultTopicQueueNums"`
	AutoCreateTopicEnable        bool          `prop:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup  bool          `prop:"autoCreateSubscriptionGroup"`
	ClusterTopicEnable           bool          `prop:"clusterTopicEnable"`
	BrokerTopicEnable            bool          `prop:"brokerTopicEnable"`
	RejectTransactionMessage     bool          `prop:"rejectTransactionMessage"`
	FlushConsumerOffsetInterval  time.Duration `prop:"flushConsumerOffsetInterval" unit:"ms"`
	BrokerFastFailureEnable      bool          `prop:"brokerFastFailureEnable"`
	WaitTimeMillsInSendQueue     time.Duration `prop:"waitTimeMillsInSendQueue" unit:"ms"`
	WaitTimeMillsInPullQueue     time.Duration `prop:"waitTimeMillsInPullQueue" unit:"ms"`
	LongPollingEnable            bool          `prop:"longPollingEnable"`
	ShortPollingTimeMills        time.Duration `prop:"shortPollingTimeMills" unit:"ms"`
	RegisterNameServerPeriod     time.Duration `prop:"registerNameServerPeriod" unit:"ms"`
	RegisterBrokerTimeoutMills   time.Duration `prop:"registerBrokerTimeoutMills" unit:"ms"`
	TransactionTimeOut           time.Duration `prop:"transactionTimeOut" unit:"ms"`
	TransactionCheckMax          int           `prop:"transactionCheckMax"`
	TransactionCheckInterval     time.Duration `prop:"transactionCheckInterval" unit:"ms"`
	AclEnable                    bool          `prop:"aclEnable"`
	SlaveReadEnable              bool          `prop:"slaveReadEnable"`
	OffsetCheckInSlave           bool          `prop:"offsetCheckInSlave" help:"let a slave answer PULL_OFFSET_MOVED and correct offsets (default: keep the offset, PULL_RETRY_IMMEDIATELY)"`
	TraceTopicEnable             bool          `prop:"traceTopicEnable"`
	MsgTraceTopicName            string        `prop:"msgTraceTopicName"`
	MaxReconsumeTimesDefault     int           `prop:"maxReconsumeTimes"`
	NotifyConsumerIdsChanged     bool          `prop:"notifyConsumerIdsChangedEnable"`
	MessageDelayLevel            string        `prop:"messageDelayLevel"`
	DefaultQueryMaxNum           int           `prop:"defaultQueryMaxNum"`
	ChannelExpiredTimeout        time.Duration `prop:"channelExpiredTimeout" unit:"ms"`
	CheckTransactionMessage      bool          `prop:"checkTransactionMessageEnable"`
	AccessMessageInMemoryMaxRate int           `prop:"accessMessageInMemoryMaxRatio"`

	// MessageStoreConfig
	StorePathRootDir                  string        `prop:"storePathRootDir"`
	StorePathCommitLog                string        `prop:"storePathCommitLog"`
	StorePathConsumeQueue             string        `prop:"storePathConsumeQueue"`
	StorePathIndex                    string        `prop:"storePathIndex"`
	StoreCheckpoint                   string        `prop:"storeCheckpoint"`
	AbortFile                         string        `prop:"abortFile"`
	MappedFileSizeCommitLog           int64         `prop:"mappedFileSizeCommitLog"`
	MappedFileSizeConsumeQueue        int64         `prop:"mappedFileSizeConsumeQueue"`
	FlushDiskType                     string        `prop:"flushDiskType"` // ASYNC_FLUSH | SYNC_FLUSH
	BrokerRole                        string        `prop:"brokerRole" help:"ASYNC_MASTER, SYNC_MASTER (a send also waits for a slave's acknowledgement) or SLAVE (replicates a master, refuses writes)"`
	FlushIntervalCommitLog            time.Duration `prop:"flushIntervalCommitLog" unit:"ms"`
	FlushCommitLogLeastPages          int           `prop:"flushCommitLogLeastPages"`
	FlushCommitLogThoroughInterval    time.Duration `prop:"flushCommitLogThoroughInterval" unit:"ms"`
	FlushCommitLogTimed               bool          `prop:"flushCommitLogTimed"`
	CommitIntervalCommitLog           time.Duration `prop:"commitIntervalCommitLog" unit:"ms"`
	CommitCommitLogLeastPages         int           `prop:"commitCommitLogLeastPages"`
	CommitCommitLogThoroughInterval   time.Duration `prop:"commitCommitLogThoroughInterval" unit:"ms"`
	FlushIntervalConsumeQueue         time.Duration `prop:"flushIntervalConsumeQueue" unit:"ms"`
	FlushConsumeQueueLeastPages       int           `prop:"flushConsumeQueueLeastPages"`
	FlushConsumeQueueThoroughInterval time.Duration `prop:"flushConsumeQueueThoroughInterval" unit:"ms"`
	SyncFlushTimeout                  time.Duration `prop:"syncFlushTimeout" unit:"ms"`
	MaxMessageSize                    int           `prop:"maxMessageSize"`
	FileReservedTime                  time.Duration `prop:"fileReservedTime" unit:"h"`
	DeleteWhen                        string        `prop:"deleteWhen"`
	DiskMaxUsedSpaceRatio             int           `prop:"diskMaxUsedSpaceRatio"`
	CleanFileForciblyEnable           bool          `prop:"cleanFileForciblyEnable"` // default false, unlike RocketMQ: README "When the disk fills up"
	CleanResourceInterval             time.Duration `prop:"cleanResourceInterval" unit:"ms"`
	DestroyMappedFileIntervalForcibly time.Duration `prop:"destroyMappedFileIntervalForcibly" unit:"ms"`
	TransientStorePoolEnable          bool          `prop:"transientStorePoolEnable"`
	TransientStorePoolSize            int           `prop:"transientStorePoolSize"`
	WarmMappedFileEnable              bool          `prop:"warmMapedFileEnable"`
	FlushLeastPagesWhenWarmMappedFile int           `prop:"flushLeastPagesWhenWarmMapedFile"`
	OSPageCacheBusyTimeOutMills       time.Duration `prop:"osPageCacheBusyTimeOutMills" unit:"ms"`
	UseReentrantLockWhenPutMessage    bool          `prop:"useReentrantLockWhenPutMessage"`
	MessageIndexEnable                bool          `prop:"messageIndexEnable"`
	MaxHashSlotNum                    int           `prop:"maxHashSlotNum"`
	MaxIndexNum                       int           `prop:"maxIndexNum"`
	CheckCRCOnRecover                 bool          `prop:"checkCRCOnRecover"`
	MaxTransferCountOnMessageInMemory int           `prop:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInMemory int           `prop:"maxTransferBytesOnMessageInMemory"`
	MaxTransferCountOnMessageInDisk   int           `prop:"maxTransferCountOnMessageInDisk"`
	MaxTransferBytesOnMessageInDisk   int           `prop:"maxTransferBytesOnMessageInDisk"`
	// Master-slave replication (PROTOCOL.md §13.6). HAListenPort 0 means listenPort + 1
	// (RocketMQ's BrokerStartup always sets that), or a free port when listenPort is 0 too;
	// New resolves it.
	HAListenPort            int           `prop:"haListenPort" help:"port of the HA listener slaves replicate from; 0: listenPort + 1 (a free port when listenPort is 0)"`
	HAMasterAddress         string        `prop:"haMasterAddress" help:"slave: fixed ip:port of the master's HA listener; empty: learnt from the name servers"`
	HASendHeartbeatInterval time.Duration `prop:"haSendHeartbeatInterval" unit:"ms" help:"slave report and master heartbeat period on an idle HA connection (ms)"`
	HAHousekeepingInterval  time.Duration `prop:"haHousekeepingInterval" unit:"ms" help:"an HA connection idle this long is closed (ms); must exceed haSendHeartbeatInterval"`
	HATransferBatchSize     int           `prop:"haTransferBatchSize" help:"largest CommitLog chunk in one HA transfer frame (bytes)"`
	HASlaveFallbehindMax    int64         `prop:"haSlaveFallbehindMax" help:"SYNC_MASTER: a slave further behind than this (bytes) does not count as available"`
	SlaveTimeout            time.Duration `prop:"slaveTimeout" unit:"ms" help:"SYNC_MASTER: how long a send waits for a slave's acknowledgement (ms)"`
	// FastListenPort is RocketMQ's "fast" (VIP) channel, NettyServerConfig's 5.x name: a second
	// listener serving the same requests as listenPort, which Java slaves fetch topics from
	// (PROTOCOL.md §13.4). -1 means listenPort − 2 (off when that is not a port, or when
	// listenPort is 0: tests pick ports); 0 turns it off. New resolves it.
	FastListenPort int `prop:"fastListenPort" help:"second listener (RocketMQ's fast/VIP port) serving the same requests; -1: listenPort - 2, 0: off. A slave fetches topics from its master's listenPort - 2 unless its own fastListenPort is 0"`

	// SlaveSynchronize's schedule (PROTOCOL.md §13.4; slavesync.go). RocketMQ has no keys for
	// them (BrokerController hard-codes 3 s and 10 s), so neither has ringmq: they are not
	// properties, only tests set them. 0 = the RocketMQ value.
	slaveSyncInitialDelay time.Duration
	slaveSyncInterval     time.Duration

	// ringmq's own keys (DESIGN.md "Config").
	FlushBackend             string `prop:"flushBackend"` // iouring | msync | fdatasync
	NetEngine                string `prop:"netEngine"`    // gnet | std
	NetEventLoops            int    `prop:"netEventLoops"`
	MetricsAddr              string `prop:"metricsAddr"`
	NamesrvEmbedded          bool   `prop:"namesrvEmbedded"`
	NamesrvListenPort        int    `prop:"namesrvListenPort"`
	AclFile                  string `prop:"aclFile"`
	TransientStorePoolPinned bool   `prop:"transientStorePoolPinned"`
	WarmMappedFileMlock      bool   `prop:"warmMappedFileMlock"` // pin warmed CommitLog files (RocketMQ always does)
	MaxConnections           int    `prop:"maxConnections"`
	// RequestBudgetBytes bounds the bytes of large request frames (over 64 KiB) the broker
	// reads and decodes at once, over all connections; a frame that does not fit waits and
	// its connection stops reading meanwhile (netio budget.go).
	RequestBudgetBytes int64 `prop:"requestBudgetBytes" help:"bytes of requests over 64 KiB read and decoded at once, over all connections; more wait, their connections not read meanwhile"`
	// TLS on listenPort (RocketMQ sets these as JVM properties tls.server.mode,
	// tls.server.certPath, tls.server.keyPath). tlsEnable=true alone means enforcing;
	// tlsServerMode (disabled | permissive | enforcing) says it explicitly, permissive
	// serving plain and TLS clients on the same port.
	TLSEnable     bool   `prop:"tlsEnable"`
	TLSServerMode string `prop:"tlsServerMode"`
	TLSCertFile   string `prop:"tlsCertFile"` // PEM certificate chain
	TLSKeyFile    string `prop:"tlsKeyFile"`  // PEM private key
}

// DefaultConfig returns RocketMQ 4.9's defaults (PROTOCOL.md §11) with ringmq's
// choices where RocketMQ has none: the store under ./data, an embedded NameServer.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "broker-a"
	}
	return Config{
		BrokerClusterName:           "DefaultCluster",
		BrokerName:                  host,
		BrokerID:                    0,
		ListenPort:                  10911,
		BrokerPermission:            6,
		DefaultTopicQueueNums:       8,
		AutoCreateTopicEnable:       true,
		AutoCreateSubscriptionGroup: true,
		ClusterTopicEnable:          true,
		BrokerTopicEnable:           true,
		FlushConsumerOffsetInterval: 5 * time.Second,
		BrokerFastFailureEnable:     true,
		WaitTimeMillsInSendQueue:    200 * time.Millisecond,
		WaitTimeMillsInPullQueue:    5 * time.Second,
		LongPollingEnable:           true,
		ShortPollingTimeMills:       time.Second,
		RegisterNameServerPeriod:    30 * time.Second,
		RegisterBrokerTimeoutMills:  24 * time.Second,
		TransactionTimeOut:          6 * time.Second,
		TransactionCheckMax:         15,
		TransactionCheckInterval:    60 * time.Second,
		MsgTraceTopicName:           "RMQ_SYS_TRACE_TOPIC",
		MaxReconsumeTimesDefault:    16,
		NotifyConsumerIdsChanged:    true,
		MessageDelayLevel:           "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		DefaultQueryMaxNum:          32,
		ChannelExpiredTimeout:       120 * time.Second,
		CheckTransactionMessage:     true,

		AccessMessageInMemoryMaxRate: 40,

		StorePathRootDir:                  "./data",
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * 20,
		FlushDiskType:                     "ASYNC_FLUSH",
		BrokerRole:                        "ASYNC_MASTER",
		FlushIntervalCommitLog:            500 * time.Millisecond,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10 * time.Second,
		CommitIntervalCommitLog:           200 * time.Millisecond,
		CommitCommitLogLeastPages:         4,
		CommitCommitLogThoroughInterval:   200 * time.Millisecond,
		FlushIntervalConsumeQueue:         time.Second,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60 * time.Second,
		SyncFlushTimeout:                  5 * time.Second,
		MaxMessageSize:                    4 << 20,
		FileReservedTime:                  72 * time.Hour,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		CleanResourceInterval:             10 * time.Second,
		DestroyMappedFileIntervalForcibly: 120 * time.Second,
		TransientStorePoolSize:            5,
		FlushLeastPagesWhenWarmMappedFile: 1024 / 4 * 16,
		OSPageCacheBusyTimeOutMills:       time.Second,
		UseReentrantLockWhenPutMessage:    true,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5000000,
		MaxIndexNum:                       5000000 * 4,
		CheckCRCOnRecover:                 true,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInMemory: 256 * 1024,
		MaxTransferCountOnMessageInDisk:   8,
		MaxTransferBytesOnMessageInDisk:   64 * 1024,
		HASendHeartbeatInterval:           5 * time.Second,
		HAHousekeepingInterval:            20 * time.Second,
		HATransferBatchSize:               32 << 10,
		HASlaveFallbehindMax:              256 << 20,
		SlaveTimeout:                      3 * time.Second,
		FastListenPort:                    -1,

		FlushBackend:             "", // empty: the measured best available (see package flush)
		NetEngine:                "gnet",
		NetEventLoops:            0, // 0: GOMAXPROCS
		NamesrvEmbedded:          true,
		NamesrvListenPort:        9876,
		TransientStorePoolPinned: true,
		MaxConnections:           10000, // below the usual 20000 open-file limit (netio warns above it)
		RequestBudgetBytes:       netio.DefaultRequestBudgetBytes,
	}
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
// that does not parse is an error naming the key.
func (c *Config) Set(key, value string, line int) (*ConfigWarning, error) {
	if alias, ok := LegacyAliases[key]; ok {
		key = alias
	}
	f, ok := fieldByProp(c, key)
	if !ok {
		if why, ok := NotNeededKeys[key]; ok {
			return &ConfigWarning{Key: key, Line: line, Message: why}, nil
		}
		return &ConfigWarning{Key: key, Line: line, Unknown: true}, nil
	}
	if err := setField(f.value, f.unit, strings.TrimSpace(value)); err != nil {
		return nil, fmt.Errorf("%w: key %s: %w", ErrConfig, key, err)
	}
	return nil, nil
}

// PropertyNames lists every key the broker reads, in declaration order.
func PropertyNames() []string {
	t := reflect.TypeOf(Config{})
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("prop"); name != "" { // untagged fields are not keys
			names = append(names, name)
		}
	}
	return names
}

// PropertyHelp is a line on what a key does, for --help; empty for the keys that
// RocketMQ's documentation already explains.
func PropertyHelp(key string) string {
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		if f := t.Field(i); key != "" && f.Tag.Get("prop") == key {
			return f.Tag.Get("help")
		}
	}
	return ""
}

// Get returns a property's current value as text, in the file's units.
func (c *Config) Get(key string) (string, bool) {
	f, ok := fieldByProp(c, key)
	if !ok {
		return "", false
	}
	v := f.value
	if d, ok := v.Interface().(time.Duration); ok {
		return strconv.FormatInt(int64(d/unitOf(f.unit)), 10), true
	}
	return fmt.Sprint(v.Interface()), true
}

type configField struct {
	value reflect.Value
	unit  string
}

func fieldByProp(c *Config, key string) (configField, bool) {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if key != "" && t.Field(i).Tag.Get("prop") == key {
			return configField{value: v.Field(i), unit: t.Field(i).Tag.Get("unit")}, true
		}
	}
	return configField{}, false
}

func unitOf(unit string) time.Duration {
	switch unit {
	case "h":
		return time.Hour
	case "s":
		return time.Second
	default:
		return time.Millisecond
	}
}

func setField(v reflect.Value, unit, s string) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", s)
			}
			v.SetInt(int64(time.Duration(n) * unitOf(unit)))
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	default:
		return fmt.Errorf("unsupported field kind %s", v.Kind())
	}
	return nil
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
	}
	switch c.FlushDiskType {
	case "ASYNC_FLUSH", "SYNC_FLUSH":
	default:
		return bad("flushDiskType", "must be ASYNC_FLUSH or SYNC_FLUSH")
	}
	switch c.BrokerRole {
	case "ASYNC_MASTER", "SYNC_MASTER":
	case "SLAVE":
		if c.BrokerID <= 0 {
			// RocketMQ's BrokerStartup exits with status -3 here.
			return bad("brokerId", fmt.Sprintf("%d: a SLAVE needs brokerId > 0 (0 is the master's)", c.BrokerID))
		}
	default:
		return bad("brokerRole", fmt.Sprintf("%q: must be ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole))
	}
	if err := c.validateHA(); err != nil {
		return err
	}
	switch c.FlushBackend {
	case "", "iouring", "msync", "fdatasync":
	default:
		return bad("flushBackend", "must be iouring, msync or fdatasync")
	}
	switch c.NetEngine {
	case "gnet", "std":
	default:
		return bad("netEngine", "must be gnet or std")
	}
	if c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95 {
		// RocketMQ clamps to 10..95 silently; keep its behaviour but never silently.
		return bad("diskMaxUsedSpaceRatio", "must be 10..95")
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		return bad("messageDelayLevel", err.Error())
	}
	switch c.TLSServerMode {
	case "", "permissive", "enforcing":
	case "disabled":
		if c.TLSEnable {
			return bad("tlsServerMode", "disabled contradicts tlsEnable=true")
		}
	default:
		return bad("tlsServerMode", "must be disabled, permissive or enforcing")
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

// EffectiveTLSMode is the remoting port's TLS mode: tlsServerMode when set, else
// "enforcing" with tlsEnable=true and "disabled" without.
func (c *Config) EffectiveTLSMode() string {
	switch {
	case c.TLSServerMode != "":
		return c.TLSServerMode
	case c.TLSEnable:
		return "enforcing"
	default:
		return "disabled"
	}
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
