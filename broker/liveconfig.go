package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ringmq/ringmq/broker/admin"
	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/fsutil"
)

// Changing the configuration while the broker runs: UPDATE_BROKER_CONFIG (mqadmin
// updateBrokerConfig), served by the admin plane (admin.Plane.ProcessUpdateBrokerConfig) with
// updateConfig below.
//
// A request's keys are checked as a start checks them: each is set on a copy of the running
// configuration (Config.Set: an unknown key, a value that does not parse) and the copy is
// validated whole (Config.Validate). A key not in liveKeys needs a restart and is refused. Then
// the keys are written to the -c file, when there is one, and applied; a refusal or a failed
// write changes nothing. GET_BROKER_CONFIG shows the running configuration, its version
// advanced by each update.
//
// The keys that change at run time, and who reads them: the planes' request paths read
// broker/live's atomics (brokerPermission, slaveReadEnable, offsetCheckInSlave,
// rejectTransactionMessage, notifyConsumerIdsChangedEnable) and the metadata tables keep
// autoCreateTopicEnable, autoCreateSubscriptionGroup and the limits autoCreateSubscriptionGroupLimit
// and autoCreateRetryTopicLimit. Everything else is copied into a
// store, a server, a pool or a service when it starts, and changing it safely would take
// restarting that part: a restart of the broker says so honestly.

// liveKeys are the keys UPDATE_BROKER_CONFIG changes while the broker runs, each with how the
// new configuration's value takes effect.
var liveKeys = map[string]func(b *Broker, c *Config){
	"brokerPermission":               func(b *Broker, c *Config) { b.live.BrokerPermission.Store(int32(c.BrokerPermission)) },
	"slaveReadEnable":                func(b *Broker, c *Config) { b.live.SlaveReadEnable.Store(c.SlaveReadEnable) },
	"offsetCheckInSlave":             func(b *Broker, c *Config) { b.live.OffsetCheckInSlave.Store(c.OffsetCheckInSlave) },
	"rejectTransactionMessage":       func(b *Broker, c *Config) { b.live.RejectTransactionMessage.Store(c.RejectTransactionMessage) },
	"notifyConsumerIdsChangedEnable": func(b *Broker, c *Config) { b.live.NotifyConsumerIdsChanged.Store(c.NotifyConsumerIdsChanged) },
	"enablePropertyFilter":           func(b *Broker, c *Config) { b.live.EnablePropertyFilter.Store(c.EnablePropertyFilter) },
	"autoCreateTopicEnable":          func(b *Broker, c *Config) { b.topics.SetAutoCreateTopicEnable(c.AutoCreateTopicEnable) },
	"autoCreateSubscriptionGroup":    func(b *Broker, c *Config) { b.subscriptions.SetAutoCreate(c.AutoCreateSubscriptionGroup) },
	// An operator whose clients reach a limit raises it without a restart.
	"autoCreateSubscriptionGroupLimit": func(b *Broker, c *Config) {
		b.subscriptions.SetAutoCreateLimit(c.AutoCreateSubscriptionGroupLimit)
	},
	"autoCreateRetryTopicLimit": func(b *Broker, c *Config) { b.topics.SetAutoCreateRetryTopicLimit(c.AutoCreateRetryTopicLimit) },
}

// LiveKeys lists, sorted, the keys UPDATE_BROKER_CONFIG changes while the broker runs; every
// other key needs a restart.
func LiveKeys() []string {
	keys := make([]string, 0, len(liveKeys))
	for k := range liveKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// configBlackList is RocketMQ's list of keys UPDATE_BROKER_CONFIG never changes
// (AdminBrokerProcessor's configBlackList), refused with its remark.
var configBlackList = []string{"brokerConfigPath", "rocketmqHome", "configBlackList"}

// newLive is the run-time keys' shared state with cfg's values (the metadata tables take theirs
// from their options).
func newLive(cfg *Config) *live.Settings {
	l := new(live.Settings)
	l.BrokerPermission.Store(int32(cfg.BrokerPermission))
	l.SlaveReadEnable.Store(cfg.SlaveReadEnable)
	l.OffsetCheckInSlave.Store(cfg.OffsetCheckInSlave)
	l.RejectTransactionMessage.Store(cfg.RejectTransactionMessage)
	l.NotifyConsumerIdsChanged.Store(cfg.NotifyConsumerIdsChanged)
	l.EnablePropertyFilter.Store(cfg.EnablePropertyFilter)
	return l
}

// runningConfig is the configuration as UPDATE_BROKER_CONFIG left it.
type runningConfig struct {
	mu      sync.Mutex // one update at a time (RocketMQ's updateBrokerConfig is synchronized)
	current atomic.Pointer[versionedConfig]
	// file is the -c file (Deps.ConfigFile) the changes are written to; "" none.
	file string
}

// versionedConfig is one version of the running configuration; never modified once stored.
type versionedConfig struct {
	cfg     Config
	version codec.DataVersion
}

// runningConfig returns the configuration as it is now, with every UPDATE_BROKER_CONFIG
// applied. Safe for concurrent use.
func (b *Broker) runningConfig() *versionedConfig { return b.running.current.Load() }

// updateConfig is admin.Deps.UpdateConfig: it checks props and applies them, all or none (see
// above). Safe for concurrent use; it blocks on disk when there is a -c file.
func (b *Broker) updateConfig(props []conf.Property) error {
	rc := &b.running
	rc.mu.Lock()
	defer rc.mu.Unlock()
	cur := rc.current.Load()
	next := cur.cfg
	var keys []string
	for _, p := range props {
		key := p.Key
		if alias, ok := LegacyAliases[key]; ok {
			key = alias
		}
		if slices.Contains(configBlackList, key) {
			return &admin.ConfigRefused{NoPermission: true, Remark: "Can not update config in black list: " + key}
		}
		w, err := next.Set(key, p.Value, 0)
		var ve *conf.ValueError
		var unknown *conf.UnknownKeyError
		switch {
		case errors.As(err, &ve):
			return &admin.ConfigRefused{Remark: ve.Error()}
		case errors.As(err, &unknown):
			return &admin.ConfigRefused{Remark: unknown.Error()}
		case err != nil:
			return &admin.ConfigRefused{Remark: err.Error()}
		case w != nil:
			return &admin.ConfigRefused{Remark: fmt.Sprintf("key %s is not used by ringmq: %s", key, w.Message)}
		}
		if liveKeys[key] == nil {
			return &admin.ConfigRefused{NoPermission: true, Remark: fmt.Sprintf(
				"key %s needs a restart: edit broker.conf (keys that change at run time: %s)", key, strings.Join(LiveKeys(), ", "))}
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	if err := next.Validate(); err != nil {
		var ve *conf.ValueError
		if errors.As(err, &ve) {
			return &admin.ConfigRefused{Remark: ve.Error()}
		}
		return &admin.ConfigRefused{Remark: err.Error()}
	}
	if rc.file != "" {
		if err := persistKeys(rc.file, &next, keys); err != nil {
			return fmt.Errorf("broker: config file %s: %w; nothing changed", rc.file, err)
		}
	}
	for _, key := range keys {
		liveKeys[key](b, &next)
	}
	rc.current.Store(&versionedConfig{cfg: next,
		version: codec.DataVersion{Counter: cur.version.Counter + 1, Timestamp: b.clock().UnixMilli()}})
	args := make([]any, 0, 2*len(keys)+2)
	for _, key := range keys {
		v, _ := next.Get(key)
		args = append(args, key, v)
	}
	if rc.file == "" {
		b.logger.Warn("broker: config updated, until the broker stops: it was started without a config file (-c)", args...)
	} else {
		b.logger.Info("broker: config updated", append(args, "file", rc.file)...)
	}
	return nil
}

// persistKeys writes keys' values in c to the properties file at path, in place (conf.Rewrite:
// comments and other keys kept), atomically, keeping the file's permissions. A symbolic link
// is followed, so that the file it names is the one replaced.
func persistKeys(path string, c *Config, keys []string) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	set := make([]conf.Property, len(keys))
	for i, key := range keys {
		v, _ := c.Get(key)
		set[i] = conf.Property{Key: key, Value: v}
	}
	out, err := conf.Rewrite(data, set, func(k string) string {
		if alias, ok := LegacyAliases[k]; ok {
			return alias
		}
		return k
	})
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomicMode(target, out, info.Mode().Perm(), nil)
}
