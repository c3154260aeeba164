package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// Cluster, broker and name-server commands: clusterList, brokerStatus, getBrokerConfig,
// updateBrokerConfig, updateKvConfig.

// clusterBroker is one row of clusterList.
type clusterBroker struct {
	Cluster            string  `json:"cluster"`
	BrokerName         string  `json:"brokerName"`
	BrokerID           int64   `json:"brokerId"`
	Addr               string  `json:"addr"`
	Version            string  `json:"version"`
	InTPS              float64 `json:"inTps"`
	SendQueueSize      string  `json:"sendThreadPoolQueueSize"`
	SendQueueWaitMs    string  `json:"sendThreadPoolQueueHeadWaitTimeMills"`
	OutTPS             float64 `json:"outTps"`
	PullQueueSize      string  `json:"pullThreadPoolQueueSize"`
	PullQueueWaitMs    string  `json:"pullThreadPoolQueueHeadWaitTimeMills"`
	PageCacheLockMs    string  `json:"pageCacheLockTimeMills"`
	Hours              float64 `json:"hoursOfMessages"` // age of the oldest stored message, hours
	CommitLogDiskRatio float64 `json:"commitLogDiskRatio"`
	Active             bool    `json:"active"`
	InTotalYesterday   int64   `json:"inTotalYesterday"`
	OutTotalYesterday  int64   `json:"outTotalYesterday"`
	InTotalToday       int64   `json:"inTotalToday"`
	OutTotalToday      int64   `json:"outTotalToday"`
	Error              string  `json:"error,omitempty"` // runtime info could not be read
}

type clusterListResult struct {
	Brokers []clusterBroker `json:"brokers"`
	more    bool
}

func (r *clusterListResult) text(w io.Writer) error {
	if r.more {
		t := newTable(w, "#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
		for _, b := range r.Brokers {
			t.row(b.Cluster, b.BrokerName, b.InTotalYesterday, b.OutTotalYesterday, b.InTotalToday, b.OutTotalToday)
		}
		return t.flush()
	}
	t := newTable(w, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
		"#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
	for _, b := range r.Brokers {
		t.row(b.Cluster, b.BrokerName, b.BrokerID, b.Addr, b.Version,
			fmt.Sprintf("%.2f(%s,%sms)", b.InTPS, b.SendQueueSize, b.SendQueueWaitMs),
			fmt.Sprintf("%.2f(%s,%sms)", b.OutTPS, b.PullQueueSize, b.PullQueueWaitMs),
			b.PageCacheLockMs, fmt.Sprintf("%.2f", b.Hours), fmt.Sprintf("%.4f", b.CommitLogDiskRatio), b.Active)
	}
	return t.flush()
}

func (a *app) clusterListCommand() *cobra.Command {
	var more bool
	var interval int
	var cluster string
	cmd := &cobra.Command{
		Use:   "clusterList",
		Short: "List cluster infos.",
		RunE: func(*cobra.Command, []string) error {
			if interval < 0 {
				return usageError("-i %d: must be at least 0 seconds", interval)
			}
			if interval == 0 {
				return a.clusterList(cluster, more)
			}
			// -i repeats the listing until the process is stopped, as RocketMQ's does.
			tick := time.NewTicker(time.Duration(interval) * time.Second)
			defer tick.Stop()
			for {
				if err := a.clusterList(cluster, more); err != nil {
					return err
				}
				<-tick.C
			}
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&more, "moreStats", "m", false, "Print more stats")
	f.IntVarP(&interval, "interval", "i", 0, "specify intervals numbers, it is in seconds")
	f.StringVarP(&cluster, "clusterName", "c", "", "which cluster")
	return cmd
}

func (a *app) clusterList(cluster string, more bool) error {
	ci, err := a.clusterInfo()
	if err != nil {
		return err
	}
	clusters := slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	if cluster != "" {
		clusters = []string{cluster}
	}
	res := &clusterListResult{Brokers: []clusterBroker{}, more: more}
	var unreachable []error
	for _, c := range clusters {
		brokers, err := brokersOf(ci, c, true)
		if err != nil {
			return err
		}
		for _, b := range brokers {
			row := clusterBroker{Cluster: c, BrokerName: b.Name, BrokerID: b.ID, Addr: b.Addr}
			kv, err := a.brokerRuntime(b.Addr)
			if err != nil {
				row.Error = err.Error()
				unreachable = append(unreachable, err)
			} else {
				a.fillClusterRow(&row, kv)
			}
			res.Brokers = append(res.Brokers, row)
		}
	}
	// The others are listed; a broker that did not answer has an empty row there, and the
	// command fails naming it.
	if err := a.emit(res); err != nil {
		return err
	}
	return errors.Join(unreachable...)
}

// fillClusterRow reads clusterList's columns out of a broker's runtime table.
func (a *app) fillClusterRow(row *clusterBroker, kv map[string]string) {
	num := func(key string) int64 { n, _ := strconv.ParseInt(kv[key], 10, 64); return n }
	firstFloat := func(key string) float64 {
		f, _ := strconv.ParseFloat(strings.Fields(kv[key] + " 0")[0], 64)
		return f
	}
	row.Version = kv["brokerVersionDesc"]
	row.InTPS = firstFloat("putTps")
	row.OutTPS = firstFloat("getTransferedTps") // 4.x's spelling
	if _, ok := kv["getTransferredTps"]; ok {
		row.OutTPS = firstFloat("getTransferredTps") // 5.x's
	}
	orZero := func(key string) string {
		if v := kv[key]; v != "" {
			return v
		}
		return "0"
	}
	row.SendQueueSize, row.SendQueueWaitMs = orZero("sendThreadPoolQueueSize"), orZero("sendThreadPoolQueueHeadWaitTimeMills")
	row.PullQueueSize, row.PullQueueWaitMs = orZero("pullThreadPoolQueueSize"), orZero("pullThreadPoolQueueHeadWaitTimeMills")
	row.PageCacheLockMs = kv["pageCacheLockTimeMills"]
	if earliest := num("earliestMessageTimeStamp"); earliest > 0 {
		row.Hours = float64(a.now().UnixMilli()-earliest) / float64(time.Hour/time.Millisecond)
	}
	row.CommitLogDiskRatio, _ = strconv.ParseFloat(kv["commitLogDiskRatio"], 64)
	row.Active = kv["brokerActive"] == "true"
	row.InTotalYesterday = num("msgPutTotalTodayMorning") - num("msgPutTotalYesterdayMorning")
	row.OutTotalYesterday = num("msgGetTotalTodayMorning") - num("msgGetTotalYesterdayMorning")
	row.InTotalToday = num("msgPutTotalTodayNow") - num("msgPutTotalTodayMorning")
	row.OutTotalToday = num("msgGetTotalTodayNow") - num("msgGetTotalTodayMorning")
}

// brokerRuntime asks a broker for GET_BROKER_RUNTIME_INFO's table.
func (a *app) brokerRuntime(addr string) (map[string]string, error) {
	resp, err := a.askBroker(addr, codec.RequestGetBrokerRuntimeInfo, nil, nil, "")
	if err != nil {
		return nil, err
	}
	kv, err := codec.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("runtime info of broker %s: %w", addr, err)
	}
	return kv.Table, nil
}

// targetBrokers resolves the -b / -c pair most broker commands take: the one address, or the
// brokers of the cluster (masters only unless withSlaves).
func (a *app) targetBrokers(addr, cluster string, withSlaves bool) ([]brokerRef, error) {
	switch {
	case addr != "" && cluster != "":
		return nil, usageError("give -b (brokerAddr) or -c (clusterName), not both")
	case addr != "":
		return []brokerRef{{Addr: addr}}, nil
	case cluster != "":
		ci, err := a.clusterInfo()
		if err != nil {
			return nil, err
		}
		return brokersOf(ci, cluster, withSlaves)
	}
	return nil, usageError("give -b (brokerAddr) or -c (clusterName)")
}

type brokerStatusResult struct {
	Brokers []brokerKV `json:"brokers"`
	cluster bool
}

type brokerKV struct {
	Addr  string            `json:"addr"`
	Table map[string]string `json:"table"`
}

func (r *brokerStatusResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, b := range r.Brokers {
		for _, k := range slices.Sorted(maps.Keys(b.Table)) {
			if r.cluster {
				ew.printf("%-24s %-32s: %s\n", b.Addr, k, b.Table[k])
			} else {
				ew.printf("%-32s: %s\n", k, b.Table[k])
			}
		}
	}
	return ew.err
}

func (a *app) brokerStatusCommand() *cobra.Command {
	var addr, cluster string
	cmd := &cobra.Command{
		Use:   "brokerStatus",
		Short: "Fetch broker runtime status data.",
		RunE: func(*cobra.Command, []string) error {
			brokers, err := a.targetBrokers(addr, cluster, true)
			if err != nil {
				return err
			}
			res := &brokerStatusResult{cluster: cluster != ""}
			for _, b := range brokers {
				kv, err := a.brokerRuntime(b.Addr)
				if err != nil {
					return err
				}
				res.Brokers = append(res.Brokers, brokerKV{Addr: b.Addr, Table: kv})
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&addr, "brokerAddr", "b", "", "Broker address")
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "which cluster")
	return cmd
}

type brokerConfigResult struct {
	Brokers []brokerConfig `json:"brokers"`
}

type brokerConfig struct {
	Addr     string            `json:"addr"`
	MasterOf string            `json:"masterAddr,omitempty"` // set for a slave listed under -c
	Config   map[string]string `json:"config"`
	banner   string
}

func (r *brokerConfigResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, b := range r.Brokers {
		ew.printf("%s\n", b.banner)
		for _, k := range slices.Sorted(maps.Keys(b.Config)) {
			ew.printf("%-50s=  %s\n", k, b.Config[k])
		}
		ew.printf("\n")
	}
	return ew.err
}

func (a *app) getBrokerConfigCommand() *cobra.Command {
	var addr, cluster string
	cmd := &cobra.Command{
		Use:   "getBrokerConfig",
		Short: "Get broker config by cluster or special broker.",
		RunE: func(*cobra.Command, []string) error {
			brokers, err := a.targetBrokers(addr, cluster, true)
			if err != nil {
				return err
			}
			res := &brokerConfigResult{}
			var master string
			for _, b := range brokers {
				cfg, err := a.brokerConfig(b.Addr)
				if err != nil {
					return err
				}
				bc := brokerConfig{Addr: b.Addr, Config: cfg, banner: fmt.Sprintf("============%s============", b.Addr)}
				if cluster != "" {
					if b.ID == 0 {
						master = b.Addr
						bc.banner = fmt.Sprintf("============Master: %s============", b.Addr)
					} else {
						bc.MasterOf = master
						bc.banner = fmt.Sprintf("============My Master: %s=====Slave: %s============", master, b.Addr)
					}
				}
				res.Brokers = append(res.Brokers, bc)
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&addr, "brokerAddr", "b", "", "get which broker")
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "get which cluster")
	return cmd
}

// brokerConfig asks a broker for GET_BROKER_CONFIG's properties ("key=value" lines).
func (a *app) brokerConfig(addr string) (map[string]string, error) {
	resp, err := a.askBroker(addr, codec.RequestGetBrokerConfig, nil, nil, "")
	if err != nil {
		return nil, err
	}
	cfg := map[string]string{}
	for _, line := range strings.Split(string(resp.Body), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("config of broker %s: line %q is not key=value", addr, line)
		}
		cfg[k] = v
	}
	return cfg, nil
}

type messageResult struct {
	Addrs   []string `json:"addrs"`
	message string
}

func (r *messageResult) text(w io.Writer) error {
	_, err := io.WriteString(w, r.message)
	return err
}

func (a *app) updateBrokerConfigCommand() *cobra.Command {
	var addr, cluster, key, value string
	var all boolArg
	cmd := &cobra.Command{
		Use:   "updateBrokerConfig",
		Short: "Update broker's config.",
		RunE: func(*cobra.Command, []string) error {
			brokers, err := a.targetBrokers(addr, cluster, all.value)
			if err != nil {
				return err
			}
			body := []byte(key + "=" + value + "\n")
			res := &messageResult{}
			var msg strings.Builder
			for _, b := range brokers {
				if _, err := a.askBroker(b.Addr, codec.RequestUpdateBrokerConfig, nil, body, fmt.Sprintf("key %q", key)); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
				fmt.Fprintf(&msg, "update broker config success, %s\n", b.Addr)
			}
			res.message = msg.String()
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "update which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "update which cluster")
	f.VarP(&all, "updateAllBroker", "a", "update all brokers include slave")
	f.StringVarP(&key, "key", "k", "", "config key")
	f.StringVarP(&value, "value", "v", "", "config value")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("value")
	return cmd
}

func (a *app) updateKvConfigCommand() *cobra.Command {
	var namespace, key, value string
	cmd := &cobra.Command{
		Use:   "updateKvConfig",
		Short: "Create or update KV config.",
		RunE: func(*cobra.Command, []string) error {
			h := &codec.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}
			servers, err := a.askEveryNamesrv(codec.RequestPutKVConfig, h, nil, fmt.Sprintf("key %q in namespace %q", key, namespace))
			if err != nil {
				return err
			}
			return a.emit(&messageResult{Addrs: servers, message: "create or update kv config to namespace success.\n"})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "s", "", "set the namespace")
	f.StringVarP(&key, "key", "k", "", "set the key name")
	f.StringVarP(&value, "value", "v", "", "set the key value")
	for _, name := range []string{"namespace", "key", "value"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
