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
	"github.com/ringmq/ringmq/internal/conf"
)

// Controller commands (RocketMQ 5's controller mode): getControllerMetaData, getSyncStateSet,
// getBrokerEpoch, electMaster, cleanBrokerMetadata, getControllerConfig, updateControllerConfig. -a names the controllers (';'-separated;
// the name servers of -n when absent, for controllers embedded in them); the commands ask the
// first that answers who leads, and send the request to the leader, as RocketMQ's do.

// controllerAddrs returns -a split on ';', else the name servers.
func (a *app) controllerAddrs(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	return a.nameServers()
}

// controllerMetaData asks the controllers in turn for CONTROLLER_GET_METADATA_INFO.
func (a *app) controllerMetaData(list string) (*codec.GetMetaDataResponseHeader, string, error) {
	addrs, err := a.controllerAddrs(list)
	if err != nil {
		return nil, "", err
	}
	var errs []error
	for _, addr := range addrs {
		resp, err := a.ask("controller "+addr, addr, request(codec.RequestControllerGetMetadataInfo, nil, nil), "", nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var h codec.GetMetaDataResponseHeader
		if err := h.Decode(resp.ExtFields); err != nil {
			return nil, "", fmt.Errorf("controller %s: %w", addr, err)
		}
		return &h, addr, nil
	}
	return nil, "", errors.Join(errs...)
}

// askControllerLeader sends a request to the controller leader.
func (a *app) askControllerLeader(list string, code codec.RequestCode, h header, body []byte, what string,
	ok ...codec.ResponseCode) (*codec.RemotingCommand, error) {
	meta, via, err := a.controllerMetaData(list)
	if err != nil {
		return nil, err
	}
	if meta.ControllerLeaderAddress == "" {
		return nil, runError{fmt.Errorf("controller %s knows no leader (the controllers may be electing one; try again)", via)}
	}
	leader := meta.ControllerLeaderAddress
	return a.ask("controller "+leader, leader, request(code, h, body), what, ok)
}

type controllerMetaDataResult struct {
	Group                   string   `json:"group"`
	ControllerLeaderID      string   `json:"controllerLeaderId"`
	ControllerLeaderAddress string   `json:"controllerLeaderAddress"`
	Peers                   []string `json:"peers"`
}

func (r *controllerMetaDataResult) text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#ControllerGroup\t%s\n#ControllerLeaderId\t%s\n#ControllerLeaderAddress\t%s",
		r.Group, r.ControllerLeaderID, r.ControllerLeaderAddress)
	for _, p := range r.Peers {
		fmt.Fprintf(&b, "\n#Peer:\t%s", p)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) getControllerMetaDataCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "getControllerMetaData",
		Short: "Get controller cluster's metadata.",
		RunE: func(*cobra.Command, []string) error {
			meta, _, err := a.controllerMetaData(addr)
			if err != nil {
				return runError{err}
			}
			res := &controllerMetaDataResult{Group: meta.Group, ControllerLeaderID: meta.ControllerLeaderID,
				ControllerLeaderAddress: meta.ControllerLeaderAddress, Peers: []string{}}
			for _, p := range strings.Split(meta.Peers, ";") {
				if p != "" {
					res.Peers = append(res.Peers, p)
				}
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&addr, "controllerAddress", "a", "", "the address of controller (default: the name servers)")
	return cmd
}

type syncStateSetResult struct {
	Groups []syncStateSetGroup `json:"groups"`
}

type syncStateSetGroup struct {
	BrokerName string `json:"brokerName"`
	codec.ReplicasInfo
}

func replicaString(r codec.ReplicaIdentity) string {
	return fmt.Sprintf("ReplicaIdentity{brokerName='%s', brokerId=%d, brokerAddress='%s', alive=%t}",
		r.BrokerName, r.BrokerID, r.BrokerAddress, r.Alive)
}

func (r *syncStateSetResult) text(w io.Writer) error {
	var b strings.Builder
	for _, g := range r.Groups {
		master := "null"
		if g.MasterBrokerID != nil {
			master = strconv.FormatInt(*g.MasterBrokerID, 10)
		}
		fmt.Fprintf(&b, "\n#brokerName\t%s\n#MasterBrokerId\t%s\n#MasterAddr\t%s\n#MasterEpoch\t%d\n#SyncStateSetEpoch\t%d\n#SyncStateSetNums\t%d\n",
			g.BrokerName, master, g.MasterAddress, g.MasterEpoch, g.SyncStateSetEpoch, len(g.InSyncReplicas))
		for _, m := range g.InSyncReplicas {
			fmt.Fprintf(&b, "\nInSyncReplica:\t%s\n", replicaString(m))
		}
		for _, m := range g.NotInSyncReplicas {
			fmt.Fprintf(&b, "\nNotInSyncReplica:\t%s\n", replicaString(m))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// repeat runs f once, or every interval seconds until the process is stopped (-i), as
// RocketMQ's commands do.
func repeat(interval int, f func() error) error {
	if interval < 0 {
		return usageError("-i %d: must be at least 0 seconds", interval)
	}
	if err := f(); err != nil || interval == 0 {
		return err
	}
	tick := time.NewTicker(time.Duration(interval) * time.Second)
	defer tick.Stop()
	for range tick.C {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// brokerNamesOf returns -b, or the broker names of cluster -c (from the name servers).
func (a *app) brokerNamesOf(brokerName, cluster string) ([]string, error) {
	switch {
	case brokerName != "" && cluster != "":
		return nil, usageError("give -b or -c, not both")
	case brokerName != "":
		return []string{brokerName}, nil
	case cluster == "":
		return nil, usageError("give -b brokerName or -c clusterName")
	}
	ci, err := a.clusterInfo()
	if err != nil {
		return nil, err
	}
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil, runError{fmt.Errorf("no cluster %q in the name servers' cluster info", cluster)}
	}
	return slices.Sorted(slices.Values(names)), nil
}

func (a *app) getSyncStateSetCommand() *cobra.Command {
	var addr, brokerName, cluster string
	var interval int
	cmd := &cobra.Command{
		Use:   "getSyncStateSet",
		Short: "Fetch syncStateSet for target brokers.",
		RunE: func(*cobra.Command, []string) error {
			names, err := a.brokerNamesOf(brokerName, cluster)
			if err != nil {
				return err
			}
			return repeat(interval, func() error { return a.getSyncStateSet(addr, names) })
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "controllerAddress", "a", "", "the address of controller (default: the name servers)")
	f.StringVarP(&cluster, "clusterName", "c", "", "which cluster")
	f.StringVarP(&brokerName, "brokerName", "b", "", "which broker to fetch")
	f.IntVarP(&interval, "interval", "i", 0, "the interval(second) of get info")
	return cmd
}

func (a *app) getSyncStateSet(addr string, names []string) error {
	body, err := codec.EncodeBrokerNameList(names)
	if err != nil {
		return err
	}
	resp, err := a.askControllerLeader(addr, codec.RequestControllerGetSyncStateData, nil, body, "broker "+strings.Join(names, ","))
	if err != nil {
		return runError{err}
	}
	info, err := codec.DecodeBrokerReplicasInfo(resp.Body)
	if err != nil {
		return runError{err}
	}
	res := &syncStateSetResult{Groups: []syncStateSetGroup{}}
	for _, name := range slices.Sorted(maps.Keys(info.ReplicasInfoTable)) {
		res.Groups = append(res.Groups, syncStateSetGroup{BrokerName: name, ReplicasInfo: info.ReplicasInfoTable[name]})
	}
	if len(res.Groups) == 0 {
		return runError{fmt.Errorf("the controller knows no broker %s", strings.Join(names, ", "))}
	}
	return a.emit(res)
}

type brokerEpochResult struct {
	Brokers []brokerEpochs `json:"brokers"`
}

type brokerEpochs struct {
	BrokerAddr string `json:"brokerAddr"`
	codec.EpochEntryCache
}

func (r *brokerEpochResult) text(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Brokers {
		fmt.Fprintf(&b, "\n#clusterName\t%s\n#brokerName\t%s\n#brokerAddr\t%s\n#brokerId\t%d",
			c.ClusterName, c.BrokerName, c.BrokerAddr, c.BrokerID)
		for _, e := range c.EpochList {
			fmt.Fprintf(&b, "\n#Epoch: EpochEntry{epoch=%d, startOffset=%d, endOffset=%d}", e.Epoch, e.StartOffset, e.EndOffset)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) getBrokerEpochCommand() *cobra.Command {
	var brokerName, cluster string
	var interval int
	cmd := &cobra.Command{
		Use:   "getBrokerEpoch",
		Short: "Fetch broker epoch entries.",
		RunE: func(*cobra.Command, []string) error {
			names, err := a.brokerNamesOf(brokerName, cluster)
			if err != nil {
				return err
			}
			return repeat(interval, func() error { return a.getBrokerEpoch(names) })
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cluster, "clusterName", "c", "", "which cluster")
	f.StringVarP(&brokerName, "brokerName", "b", "", "which broker to fetch")
	f.IntVarP(&interval, "interval", "i", 0, "the interval(second) of get info")
	return cmd
}

// getBrokerEpoch asks every replica of the named groups (from the name servers) for its
// epoch entries (GET_BROKER_EPOCH_CACHE, answered by brokers in controller mode).
func (a *app) getBrokerEpoch(names []string) error {
	ci, err := a.clusterInfo()
	if err != nil {
		return err
	}
	res := &brokerEpochResult{Brokers: []brokerEpochs{}}
	for _, name := range names {
		bd, ok := ci.BrokerAddrTable[name]
		if !ok {
			return runError{fmt.Errorf("no broker %q in the name servers' cluster info", name)}
		}
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			addr := bd.BrokerAddrs[id]
			resp, err := a.askBroker(addr, codec.RequestGetBrokerEpochCache, nil, nil, "")
			if err != nil {
				return runError{err}
			}
			cache, err := codec.DecodeEpochEntryCache(resp.Body)
			if err != nil {
				return runError{fmt.Errorf("broker %s: %w", addr, err)}
			}
			// The open epoch ends at the broker's max offset, as RocketMQ prints it.
			if n := len(cache.EpochList); n > 0 {
				cache.EpochList[n-1].EndOffset = cache.MaxOffset
			}
			res.Brokers = append(res.Brokers, brokerEpochs{BrokerAddr: addr, EpochEntryCache: *cache})
		}
	}
	return a.emit(res)
}

type electMasterResult struct {
	ClusterName       string           `json:"clusterName"`
	BrokerName        string           `json:"brokerName"`
	MasterBrokerID    int64            `json:"masterBrokerId"`
	MasterAddress     string           `json:"masterAddress"`
	MasterEpoch       int32            `json:"masterEpoch"`
	SyncStateSetEpoch int32            `json:"syncStateSetEpoch"`
	BrokerAddrs       map[int64]string `json:"brokerAddrs,omitempty"`
}

func (r *electMasterResult) text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#ClusterName\t%s\n#BrokerName\t%s\n#BrokerMasterAddr\t%s\n#MasterEpoch\t%d\n#SyncStateSetEpoch\t%d\n",
		r.ClusterName, r.BrokerName, r.MasterAddress, r.MasterEpoch, r.SyncStateSetEpoch)
	for _, id := range slices.Sorted(maps.Keys(r.BrokerAddrs)) {
		fmt.Fprintf(&b, "\t#Broker\t%d\t%s\n", id, r.BrokerAddrs[id])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) electMasterCommand() *cobra.Command {
	var addr, brokerName, cluster string
	var brokerID int64
	cmd := &cobra.Command{
		Use:   "electMaster",
		Short: "Re-elect the specified broker as master.",
		RunE: func(*cobra.Command, []string) error {
			h := &codec.ElectMasterRequestHeader{ClusterName: cluster, BrokerName: brokerName, BrokerID: brokerID,
				DesignateElect: true, InvokeTime: a.now().UnixMilli()}
			resp, err := a.askControllerLeader(addr, codec.RequestControllerElectMaster, h, nil,
				fmt.Sprintf("broker %s id %d", brokerName, brokerID))
			if err != nil {
				return runError{err}
			}
			var rh codec.ElectMasterResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil {
				return runError{err}
			}
			res := &electMasterResult{ClusterName: cluster, BrokerName: brokerName, MasterBrokerID: rh.MasterBrokerID.Value,
				MasterAddress: rh.MasterAddress, MasterEpoch: rh.MasterEpoch.Value, SyncStateSetEpoch: rh.SyncStateSetEpoch.Value}
			if body, err := codec.DecodeElectMasterResponseBody(resp.Body); err == nil && body.BrokerMemberGroup != nil {
				res.BrokerAddrs = body.BrokerMemberGroup.BrokerAddrs
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "controllerAddress", "a", "", "The address of controller (default: the name servers)")
	f.Int64VarP(&brokerID, "brokerId", "b", 0, "The id of the broker which requires to become master")
	f.StringVar(&brokerName, "brokerName", "", "The broker name of the replicas that require to be manipulated (RocketMQ's -bn)")
	f.StringVarP(&cluster, "clusterName", "c", "", "the clusterName of broker")
	for _, name := range []string{"brokerId", "brokerName", "clusterName"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

type cleanBrokerMetadataResult struct {
	BrokerName string `json:"brokerName"`
}

func (r *cleanBrokerMetadataResult) text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "clear broker %s metadata from controller success! \n", r.BrokerName)
	return err
}

func (a *app) cleanBrokerMetadataCommand() *cobra.Command {
	var addr, brokerName, cluster, ids string
	var living bool
	cmd := &cobra.Command{
		Use:   "cleanBrokerMetadata",
		Short: "Clean metadata of broker on controller.",
		RunE: func(*cobra.Command, []string) error {
			for _, s := range strings.Split(ids, ";") {
				if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); s != "" && err != nil {
					return usageError("-b %q: please set the option <brokerControllerIdsToClean> according to the format, eg: 1;2;3", ids)
				}
			}
			if !living && cluster == "" {
				return usageError("cleanLivingBroker option is false, clusterName option can not be empty.")
			}
			h := &codec.CleanControllerBrokerDataRequestHeader{ClusterName: cluster, BrokerName: brokerName,
				BrokerControllerIdsToClean: ids, IsCleanLivingBroker: living, InvokeTime: a.now().UnixMilli()}
			if _, err := a.askControllerLeader(addr, codec.RequestCleanBrokerData, h, nil, "broker "+brokerName); err != nil {
				return runError{err}
			}
			return a.emit(&cleanBrokerMetadataResult{BrokerName: brokerName})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "controllerAddress", "a", "", "The address of controller (default: the name servers)")
	f.StringVarP(&ids, "brokerControllerIdsToClean", "b", "", "The brokerController id list which requires to clean metadata. eg: 1;2;3, means that clean broker-1, broker-2 and broker-3")
	f.StringVar(&brokerName, "brokerName", "", "The broker name of the replicas that require to be manipulated (RocketMQ's -bn)")
	f.StringVarP(&cluster, "clusterName", "c", "", "The clusterName of broker")
	f.BoolVarP(&living, "cleanLivingBroker", "l", false, "Whether clean up living brokers,default value is false")
	_ = cmd.MarkFlagRequired("brokerName")
	return cmd
}

// twoLetterFlags maps RocketMQ's two-letter short options, which pflag cannot declare, to
// their long names (electMaster and cleanBrokerMetadata take -bn brokerName).
var twoLetterFlags = map[string]string{"-bn": "--brokerName"}

// translateTwoLetterFlags rewrites "-bn x" and "-bn=x" into "--brokerName ...".
func translateTwoLetterFlags(args []string) []string {
	out := make([]string, len(args))
	for i, arg := range args {
		name, value, hasValue := strings.Cut(arg, "=")
		if long, ok := twoLetterFlags[name]; ok {
			if hasValue {
				arg = long + "=" + value
			} else {
				arg = long
			}
		}
		out[i] = arg
	}
	return out
}

type controllerConfigResult struct {
	Controllers []controllerConfig `json:"controllers"`
}

type controllerConfig struct {
	Addr   string            `json:"addr"`
	Config map[string]string `json:"config"`
}

func (r *controllerConfigResult) text(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Controllers {
		fmt.Fprintf(&b, "============%s============\n", c.Addr)
		for _, k := range slices.Sorted(maps.Keys(c.Config)) {
			fmt.Fprintf(&b, "%-50s=  %s\n", k, c.Config[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) getControllerConfigCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "getControllerConfig",
		Short: "Get controller config.",
		RunE: func(*cobra.Command, []string) error {
			addrs, err := a.controllerAddrs(addr)
			if err != nil {
				return err
			}
			res := &controllerConfigResult{Controllers: []controllerConfig{}}
			for _, c := range addrs {
				resp, err := a.ask("controller "+c, c, request(codec.RequestGetControllerConfig, nil, nil), "", nil)
				if err != nil {
					return runError{err}
				}
				props, err := conf.Parse(resp.Body)
				if err != nil {
					return runError{fmt.Errorf("controller %s: %w", c, err)}
				}
				kv := map[string]string{}
				for _, p := range props {
					kv[p.Key] = p.Value
				}
				res.Controllers = append(res.Controllers, controllerConfig{Addr: c, Config: kv})
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&addr, "controllerAddress", "a", "", "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878 (default: the name servers)")
	return cmd
}

type updateControllerConfigResult struct {
	Key         string   `json:"key"`
	Value       string   `json:"value"`
	Controllers []string `json:"controllers"`
}

func (r *updateControllerConfigResult) text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "update controller config success!%s\n%s : %s\n", r.Controllers, r.Key, r.Value)
	return err
}

func (a *app) updateControllerConfigCommand() *cobra.Command {
	var addr, key, value string
	cmd := &cobra.Command{
		Use:   "updateControllerConfig",
		Short: "Update controller config.",
		RunE: func(*cobra.Command, []string) error {
			addrs, err := a.controllerAddrs(addr)
			if err != nil {
				return err
			}
			body := []byte(key + "=" + value + "\n")
			for _, c := range addrs {
				if _, err := a.ask("controller "+c, c, request(codec.RequestUpdateControllerConfig, nil, body), "key "+key, nil); err != nil {
					return runError{err}
				}
			}
			return a.emit(&updateControllerConfigResult{Key: key, Value: value, Controllers: addrs})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "controllerAddress", "a", "", "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878 (default: the name servers)")
	f.StringVarP(&key, "key", "k", "", "config key")
	f.StringVarP(&value, "value", "v", "", "config value")
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("value")
	return cmd
}
