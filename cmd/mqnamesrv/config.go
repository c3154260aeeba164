package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/logging"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/namesrv"
)

// errConfig is wrapped by every configuration error of the command.
var errConfig = errors.New("mqnamesrv: config")

// settings is everything the command reads: the name server's Config plus the pieces
// that are composed into it (listen address) or are the command's own (metrics endpoint).
type settings struct {
	ns          namesrv.Config
	listenPort  int
	bindAddress string
	metricsAddr string
	// controller: enableControllerInNamesrv and the controller's keys (controller.Config's
	// prop tags), read from the same file as RocketMQ 5 reads them.
	controllerEnabled bool
	controller        controller.Config
}

func defaultSettings() settings {
	return settings{ns: namesrv.DefaultConfig(), listenPort: 9876, controller: controller.DefaultConfig()}
}

// listenAddr composes bindAddress and listenPort. Java binds 0.0.0.0 by default; an empty
// host here listens on every interface, IPv6 included.
func (s *settings) listenAddr() string {
	return net.JoinHostPort(s.bindAddress, strconv.Itoa(s.listenPort))
}

// keySetter parses one property value into settings.
type keySetter func(s *settings, value string) error

// keys are the namesrv.conf keys the command applies: RocketMQ's NamesrvConfig and
// NettyServerConfig names, plus ringmq's own (netEngine, netEventLoops, brokerExpiryMillis,
// metricsAddr).
var keys = map[string]keySetter{
	"listenPort":                     intKey(func(s *settings, v int) { s.listenPort = v }),
	"bindAddress":                    stringKey(func(s *settings, v string) { s.bindAddress = v }),
	"kvConfigPath":                   stringKey(func(s *settings, v string) { s.ns.KVConfigPath = v }),
	"orderMessageEnable":             boolKey(func(s *settings, v bool) { s.ns.OrderMessageEnable = v }),
	"returnOrderTopicConfigToBroker": boolKey(func(s *settings, v bool) { s.ns.ReturnOrderTopicConfigToBroker = v }),
	"scanNotActiveBrokerInterval":    durationKey(time.Millisecond, func(s *settings, v time.Duration) { s.ns.ScanInterval = v }),
	"enableAllTopicList":             boolKey(func(s *settings, v bool) { s.ns.EnableAllTopicList = v }),
	"enableTopicList":                boolKey(func(s *settings, v bool) { s.ns.EnableTopicList = v }),
	"needWaitForService":             boolKey(func(s *settings, v bool) { s.ns.NeedWaitForService = v }),
	"waitSecondsForService":          durationKey(time.Second, func(s *settings, v time.Duration) { s.ns.WaitForService = v }),
	"serverChannelMaxIdleTimeSeconds": durationKey(time.Second, func(s *settings, v time.Duration) {
		s.ns.IdleTimeout = v
	}),
	"netEngine":                 stringKey(func(s *settings, v string) { s.ns.NetEngine = v }),
	"netEventLoops":             intKey(func(s *settings, v int) { s.ns.NetEventLoops = v }),
	"brokerExpiryMillis":        durationKey(time.Millisecond, func(s *settings, v time.Duration) { s.ns.BrokerExpiry = v }),
	"metricsAddr":               metricsAddrKey,
	"enableControllerInNamesrv": boolKey(func(s *settings, v bool) { s.controllerEnabled = v }),
}

// dledgerKeys are RocketMQ 5's DLedger controller keys: ringmq's controller runs on raft and
// names its peers differently, so a file with them is refused with what to write instead.
var dledgerKeys = map[string]string{
	"controllerDLegerPeers":  "controllerPeers (id-host:port of the raft transport, ';'-separated)",
	"controllerDLegerSelfId": "controllerSelfId",
	"controllerDLegerGroup":  "nothing: the raft group has no name",
}

// metricsAddrKey reads metricsAddr as mqbroker does (opsserver.ListenAddr): host:port, or empty
// or off for no endpoint.
func metricsAddrKey(s *settings, v string) error {
	addr, err := opsserver.ListenAddr(v)
	if err != nil {
		return errors.New(err.Error() + "; allowed: host:port, empty or off")
	}
	s.metricsAddr = addr
	return nil
}

// notApplied are RocketMQ name server keys (NamesrvConfig, NettyServerConfig,
// NettyClientConfig) that are accepted but have no effect here, with what ringmq does
// instead. Each one present is logged once at info.
var notApplied = map[string]string{
	"rocketmqHome":                         "ringmq needs no installation directory",
	"configStorePath":                      "runtime config updates (UPDATE_NAMESRV_CONFIG) are not supported, so nothing is stored",
	"configBlackList":                      "runtime config updates are not supported",
	"productEnvName":                       "not used",
	"clusterTest":                          "cluster test routing is not supported",
	"clientRequestThreadPoolNums":          "requests run on the network event loops (netEventLoops)",
	"defaultThreadPoolNums":                "requests run on the network event loops (netEventLoops)",
	"clientRequestThreadPoolQueueCapacity": "requests run on the network event loops; there is no request queue",
	"defaultThreadPoolQueueCapacity":       "requests run on the network event loops; there is no request queue",
	"unRegisterBrokerQueueCapacity":        "unregistrations are applied at once",
	"supportActingMaster":                  "routes are never rewritten to name a slave as acting master",
	"notifyMinBrokerIdChanged":             "brokers are not notified of min broker id changes",
	"deleteTopicWithBrokerRegistration":    "topics missing from a registration are kept, as with the default false",
	"serverWorkerThreads":                  "the network layer uses netEventLoops event loops",
	"serverCallbackExecutorThreads":        "the network layer uses netEventLoops event loops",
	"serverSelectorThreads":                "the network layer uses netEventLoops event loops",
	"serverOnewaySemaphoreValue":           "not needed: the name server sends no oneway requests",
	"serverAsyncSemaphoreValue":            "not needed: the name server sends no async requests",
	"serverSocketSndBufSize":               "the kernel's socket buffer sizes are used",
	"serverSocketRcvBufSize":               "the kernel's socket buffer sizes are used",
	"serverSocketBacklog":                  "the kernel's default listen backlog is used",
	"writeBufferHighWaterMark":             "outbound data per connection is bounded by netio's MaxOutboundBytes",
	"writeBufferLowWaterMark":              "outbound data per connection is bounded by netio's MaxOutboundBytes",
	"serverNettyWorkerGroupEnable":         "there is no Netty worker group",
	"serverPooledByteBufAllocatorEnable":   "there is no Netty allocator",
	"useEpollNativeSelector":               "gnet uses epoll on Linux already",
	"enableShutdownGracefully":             "shutdown is always graceful",
	"shutdownWaitTimeSeconds":              "shutdown waits up to 10 s for responses to drain",
	"clientWorkerThreads":                  "the name server makes no outbound calls",
	"clientCallbackExecutorThreads":        "the name server makes no outbound calls",
	"clientOnewaySemaphoreValue":           "the name server makes no outbound calls",
	"clientAsyncSemaphoreValue":            "the name server makes no outbound calls",
	"connectTimeoutMillis":                 "the name server makes no outbound calls",
	"channelNotActiveInterval":             "the name server makes no outbound calls",
	"clientChannelMaxIdleTimeSeconds":      "the name server makes no outbound calls",
	"clientSocketSndBufSize":               "the name server makes no outbound calls",
	"clientSocketRcvBufSize":               "the name server makes no outbound calls",
	"clientPooledByteBufAllocatorEnable":   "the name server makes no outbound calls",
	"clientCloseSocketIfTimeout":           "the name server makes no outbound calls",
	"useTLS":                               "TLS is not supported",
	"scanAvailableNameSrv":                 "the name server makes no outbound calls",
	"maxReconnectIntervalTimeSeconds":      "the name server makes no outbound calls",
	"enableReconnectForGoAway":             "the name server makes no outbound calls",
	"disableCallbackExecutor":              "the name server makes no outbound calls",
	"disableNettyWorkerGroup":              "the name server makes no outbound calls",
	"socksProxyConfig":                     "the name server makes no outbound calls",
}

// applyProperties applies a parsed file to s. Keys that do not apply are logged once each at
// info with what ringmq does instead, Apache RocketMQ name server keys ringmq does not read as
// warnings naming them; every value that does not parse and every key neither ringmq nor RocketMQ
// knows (a typo, with the nearest known key) is an error naming file and line (all of them,
// joined).
func applyProperties(s *settings, props []conf.Property, file string, logger *slog.Logger) error {
	var errs []error
	logged := make(map[string]bool)
	for _, p := range props {
		if _, ok := conf.Lookup(&logging.Settings{}, p.Key); ok {
			continue // read before the logger was built (loggingSettings)
		}
		set, ok := keys[p.Key]
		var setErr error
		if ok {
			if setErr = set(s, strings.TrimSpace(p.Value)); setErr != nil {
				errs = append(errs, fmt.Errorf("%w: %s:%d: %s=%q: %w", errConfig, file, p.Line, p.Key, p.Value, setErr))
			}
		}
		// The controller's keys; scanNotActiveBrokerInterval is both's, as in RocketMQ 5.
		if !ok || p.Key == "scanNotActiveBrokerInterval" && setErr == nil {
			if found, err := conf.Set(&s.controller, p.Key, strings.TrimSpace(p.Value)); found {
				if err != nil {
					errs = append(errs, fmt.Errorf("%w: %s:%d: %w", errConfig, file, p.Line, err))
				}
				continue
			}
		}
		if ok {
			continue
		}
		if instead, ok := dledgerKeys[p.Key]; ok {
			errs = append(errs, fmt.Errorf("%w: %s:%d: %s: ringmq's controller runs on raft: write %s", errConfig, file, p.Line, p.Key, instead))
			continue
		}
		why, notNeeded := notApplied[p.Key]
		kind, err := namesrvVocabulary().Check(p.Key)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %s:%d: %w", errConfig, file, p.Line, err))
		case logged[p.Key]:
		case notNeeded:
			logged[p.Key] = true
			logger.Info("config key accepted but not applied", "key", p.Key, "file", file, "line", p.Line, "instead", why)
		case kind == conf.KeyRocketMQOnly:
			logged[p.Key] = true
			logger.Warn("RocketMQ config key ignored", "key", p.Key, "file", file, "line", p.Line,
				"why", "an Apache RocketMQ 4.x key ringmq does not read; its value has no effect")
		}
	}
	return errors.Join(errs...)
}

// namesrvVocabulary is every key mqnamesrv knows: the keys it applies, the logging keys, the
// RocketMQ keys it accepts on purpose (notApplied), then Apache RocketMQ 4.9's name server keys.
var namesrvVocabulary = sync.OnceValue(func() conf.Vocabulary {
	var own []string
	for k := range keys {
		own = append(own, k)
	}
	for k := range notApplied {
		own = append(own, k)
	}
	for _, k := range conf.Keys(logging.Settings{}) {
		own = append(own, k.Name)
	}
	slices.Sort(own) // map order would break Suggest's ties differently from run to run
	return conf.Vocabulary{Own: own, RocketMQ: conf.RocketMQNamesrvKeys()}
})

func stringKey(set func(*settings, string)) keySetter {
	return func(s *settings, v string) error { set(s, v); return nil }
}

func intKey(set func(*settings, int)) keySetter {
	return func(s *settings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not a whole number")
		}
		set(s, n)
		return nil
	}
}

// boolKey accepts true/false in any letter case. Java reads anything else as false; a typo
// is refused here so that it is seen.
func boolKey(set func(*settings, bool)) keySetter {
	return func(s *settings, v string) error {
		switch strings.ToLower(v) {
		case "true":
			set(s, true)
		case "false":
			set(s, false)
		default:
			return errors.New("not true or false")
		}
		return nil
	}
}

// durationKey reads a whole number of units (Java keeps milliseconds or seconds in ints).
func durationKey(unit time.Duration, set func(*settings, time.Duration)) keySetter {
	return func(s *settings, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("not a whole number")
		}
		set(s, time.Duration(n)*unit)
		return nil
	}
}

// loggingSettings reads the logging keys (logFormat, logLevel, logFile and its rotation, the
// broker's too: internal/logging) from the file's properties; a bad value is an error naming
// file, line, key, value and the allowed values.
func loggingSettings(props []conf.Property, file string) (logging.Settings, error) {
	s, err := logging.FromProperties(props, file)
	if err != nil {
		return s, fmt.Errorf("%w: %w", errConfig, err)
	}
	return s, nil
}
