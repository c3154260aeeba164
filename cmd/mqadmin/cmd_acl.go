package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
)

// The ACL commands of RocketMQ 4.9.8's mqadmin: updateAclConfig, deleteAclConfig,
// updateGlobalWhiteAddr and clusterAclConfigVersion. Each takes -b (one broker) or -c (a
// cluster: every broker of it, slaves too, except clusterAclConfigVersion, which asks the
// masters, as RocketMQ's does). The broker must have aclEnable=true, and the requests must be
// signed by an admin account (--accessKey/--secretKey or conf/tools.yml).

// aclEditResult is what the editing commands print: the brokers changed, then the account
// or the addresses.
type aclEditResult struct {
	Addrs   []string `json:"addrs"`
	Account *aclView `json:"account,omitempty"`
	message string
}

func (r *aclEditResult) text(w io.Writer) error {
	_, err := io.WriteString(w, r.message)
	return err
}

// aclView is an account as updateAclConfig sent it; the secret key is not printed.
type aclView struct {
	AccessKey          string   `json:"accessKey"`
	WhiteRemoteAddress *string  `json:"whiteRemoteAddress,omitempty"`
	Admin              bool     `json:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `json:"topicPerms,omitempty"`
	GroupPerms         []string `json:"groupPerms,omitempty"`
}

func (v *aclView) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "accessKey=%s", v.AccessKey)
	if v.WhiteRemoteAddress != nil {
		fmt.Fprintf(&b, ", whiteRemoteAddress=%s", *v.WhiteRemoteAddress)
	}
	fmt.Fprintf(&b, ", admin=%t", v.Admin)
	if v.DefaultTopicPerm != "" {
		fmt.Fprintf(&b, ", defaultTopicPerm=%s", v.DefaultTopicPerm)
	}
	if v.DefaultGroupPerm != "" {
		fmt.Fprintf(&b, ", defaultGroupPerm=%s", v.DefaultGroupPerm)
	}
	if v.TopicPerms != nil {
		fmt.Fprintf(&b, ", topicPerms=%s", strings.Join(v.TopicPerms, ","))
	}
	if v.GroupPerms != nil {
		fmt.Fprintf(&b, ", groupPerms=%s", strings.Join(v.GroupPerms, ","))
	}
	return b.String()
}

// aclTargets are the brokers an ACL command acts on: -b, or -c's (slaves too when withSlaves).
func (a *app) aclTargets(addr, cluster string, withSlaves bool) ([]string, error) {
	brokers, err := a.targetBrokers(strings.TrimSpace(addr), strings.TrimSpace(cluster), withSlaves)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(brokers))
	for i, b := range brokers {
		addrs[i] = b.Addr
	}
	return addrs, nil
}

// editACL sends an ACL edit to each broker in turn, stopping at the first failure, and
// prints done (a format with the broker's address) for each. A failure without a reason is
// what a broker with aclEnable=false answers (Apache RocketMQ's and ringmq alike), and the
// error says so.
func (a *app) editACL(addrs []string, code codec.RequestCode, h header, what, done string) (*aclEditResult, error) {
	res := &aclEditResult{}
	var msg strings.Builder
	for _, b := range addrs {
		_, err := a.askBroker(b, code, h, nil, what)
		var re *adminclient.ResponseError
		if errors.As(err, &re) && strings.TrimSpace(re.Remark) == "" {
			return nil, fmt.Errorf("%w; a broker answers so when it has aclEnable=false", err)
		}
		if err != nil {
			return nil, err
		}
		res.Addrs = append(res.Addrs, b)
		fmt.Fprintf(&msg, done, b)
	}
	res.message = msg.String()
	return res, nil
}

// trimmedList splits a comma-separated flag value as RocketMQ's mqadmin does (trimmed, then
// split on ","); nil when the flag was not given.
func trimmedList(cmd *cobra.Command, flag, value string) []string {
	if !cmd.Flags().Changed(flag) {
		return nil
	}
	return strings.Split(strings.TrimSpace(value), ",")
}

func (a *app) updateAclConfigCommand() *cobra.Command {
	var addr, cluster, accessKey, secretKey, white, topicPerm, groupPerm, topicPerms, groupPerms string
	var admin boolArg
	cmd := &cobra.Command{
		Use:   "updateAclConfig",
		Short: "Update acl config yaml file in broker.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			addrs, err := a.aclTargets(addr, cluster, true)
			if err != nil {
				return err
			}
			view := &aclView{AccessKey: strings.TrimSpace(accessKey), Admin: admin.value,
				DefaultTopicPerm: strings.TrimSpace(topicPerm), DefaultGroupPerm: strings.TrimSpace(groupPerm),
				TopicPerms: trimmedList(cmd, "topicPerms", topicPerms), GroupPerms: trimmedList(cmd, "groupPerms", groupPerms)}
			h := &codec.CreateAccessConfigRequestHeader{AccessKey: view.AccessKey, SecretKey: strings.TrimSpace(secretKey),
				Admin: view.Admin, DefaultTopicPerm: view.DefaultTopicPerm, DefaultGroupPerm: view.DefaultGroupPerm}
			if cmd.Flags().Changed("whiteRemoteAddress") {
				w := strings.TrimSpace(white)
				view.WhiteRemoteAddress, h.WhiteRemoteAddress = &w, codec.Some(w)
			}
			if view.TopicPerms != nil {
				h.TopicPerms = codec.Some(strings.Join(view.TopicPerms, ","))
			}
			if view.GroupPerms != nil {
				h.GroupPerms = codec.Some(strings.Join(view.GroupPerms, ","))
			}
			res, err := a.editACL(addrs, codec.RequestUpdateAndCreateACLConfig, h, fmt.Sprintf("accessKey %q", view.AccessKey),
				"create or update plain access config to %s success.\n")
			if err != nil {
				return err
			}
			res.Account = view
			res.message += view.String() + "\n"
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "update acl config file to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "update acl config file to which cluster")
	f.StringVarP(&accessKey, "accessKey", "a", "", "set accessKey in acl config file")
	f.StringVarP(&secretKey, "secretKey", "s", "", "set secretKey in acl config file")
	f.StringVarP(&white, "whiteRemoteAddress", "w", "", "set white ip Address for account in acl config file")
	f.StringVarP(&topicPerm, "defaultTopicPerm", "i", "", "set default topicPerm in acl config file")
	f.StringVarP(&groupPerm, "defaultGroupPerm", "u", "", "set default GroupPerm in acl config file")
	f.StringVarP(&topicPerms, "topicPerms", "t", "", "set topicPerms list,eg: topicA=DENY,topicD=SUB")
	f.StringVarP(&groupPerms, "groupPerms", "g", "", "set groupPerms list,eg: groupD=DENY,groupD=SUB")
	f.VarP(&admin, "admin", "m", "set admin flag in acl config file")
	_ = cmd.MarkFlagRequired("accessKey")
	_ = cmd.MarkFlagRequired("secretKey")
	return cmd
}

func (a *app) deleteAclConfigCommand() *cobra.Command {
	var addr, cluster, accessKey string
	cmd := &cobra.Command{
		Use:     "deleteAclConfig",
		Aliases: []string{"deleteAccessConfig"},
		Short:   "Delete Acl Config Account in broker.",
		RunE: func(*cobra.Command, []string) error {
			addrs, err := a.aclTargets(addr, cluster, true)
			if err != nil {
				return err
			}
			key := strings.TrimSpace(accessKey)
			h := &codec.DeleteAccessConfigRequestHeader{AccessKey: key}
			res, err := a.editACL(addrs, codec.RequestDeleteACLConfig, h, fmt.Sprintf("accessKey %q", key),
				"delete plain access config account from %s success.\n")
			if err != nil {
				return err
			}
			res.Account = &aclView{AccessKey: key}
			res.message += "account's accesskey is:" + key + "\n"
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "delete acl config account from which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "delete acl config account from which cluster")
	f.StringVarP(&accessKey, "accessKey", "a", "", "set accessKey in acl config file for deleting which account")
	_ = cmd.MarkFlagRequired("accessKey")
	return cmd
}

// updateGlobalWhiteAddrCommand: without -p it sends an empty aclFileFullPath, which names the
// broker's ACL file for ringmq and Apache RocketMQ alike (RocketMQ's mqadmin leaves the key
// out, and its broker then refuses the request: the key is required).
func (a *app) updateGlobalWhiteAddrCommand() *cobra.Command {
	var addr, cluster, addrs, path string
	cmd := &cobra.Command{
		Use:   "updateGlobalWhiteAddr",
		Short: "Update global white address for acl Config File in broker.",
		RunE: func(*cobra.Command, []string) error {
			brokers, err := a.aclTargets(addr, cluster, true)
			if err != nil {
				return err
			}
			h := &codec.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: strings.TrimSpace(addrs),
				AclFileFullPath: strings.TrimSpace(path)}
			res, err := a.editACL(brokers, codec.RequestUpdateGlobalWhiteAddrsConfig, h, "",
				"update global white remote addresses to %s success.\n")
			if err != nil {
				return err
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "update global white address to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "update global white address to which cluster")
	f.StringVarP(&addrs, "globalWhiteRemoteAddresses", "g", "", "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*")
	f.StringVarP(&path, "aclFileFullPath", "p", "", "update global white address of specified acl file,eg: /xxx/plain_test.yml")
	_ = cmd.MarkFlagRequired("globalWhiteRemoteAddresses")
	return cmd
}

// aclVersionResult is clusterAclConfigVersion's table: one row per broker and ACL file.
type aclVersionResult struct {
	Rows    []aclVersionRow `json:"rows"`
	cluster bool
	loc     *time.Location
}

type aclVersionRow struct {
	Cluster     string `json:"clusterName"`
	BrokerName  string `json:"brokerName"`
	BrokerAddr  string `json:"brokerAddr"`
	AclFilePath string `json:"aclFilePath"`
	Counter     int64  `json:"counter"`
	Timestamp   int64  `json:"timestamp"`
}

func (r *aclVersionResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	const row = "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s\n"
	ew.printf(row, "#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
	for _, x := range r.Rows {
		ew.printf(row, x.Cluster, x.BrokerName, x.BrokerAddr, x.AclFilePath, fmt.Sprint(x.Counter),
			time.UnixMilli(x.Timestamp).In(r.loc).Format("2006-01-02 15:04:05"))
	}
	if r.cluster {
		ew.printf("get cluster's plain access config version success.\n")
	} else {
		ew.printf("get broker's plain access config version success.\n")
	}
	return ew.err
}

func (a *app) clusterAclConfigVersionCommand() *cobra.Command {
	var addr, cluster string
	cmd := &cobra.Command{
		Use:   "clusterAclConfigVersion",
		Short: "List all of acl config version information in cluster.",
		RunE: func(*cobra.Command, []string) error {
			addrs, err := a.aclTargets(addr, cluster, false)
			if err != nil {
				return err
			}
			res := &aclVersionResult{cluster: strings.TrimSpace(addr) == "", loc: a.loc}
			for _, b := range addrs {
				resp, err := a.askBroker(b, codec.RequestGetBrokerClusterACLInfo, nil, nil, "")
				if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					return fmt.Errorf("%w; a broker with aclEnable=false does not answer it (Apache RocketMQ's neither)", err)
				}
				if err != nil {
					return err
				}
				var h codec.GetBrokerAclConfigResponseHeader
				if err := h.Decode(resp.ExtFields); err != nil {
					return fmt.Errorf("ACL version of broker %s: %w", b, err)
				}
				var all map[string]struct{ Counter, Timestamp int64 }
				if h.AllAclFileVersion != "" {
					if err := json.Unmarshal([]byte(h.AllAclFileVersion), &all); err != nil {
						return fmt.Errorf("ACL version of broker %s: allAclFileVersion: %w", b, err)
					}
				}
				for _, path := range slices.Sorted(maps.Keys(all)) {
					res.Rows = append(res.Rows, aclVersionRow{Cluster: h.ClusterName, BrokerName: h.BrokerName,
						BrokerAddr: h.BrokerAddr, AclFilePath: path, Counter: all[path].Counter, Timestamp: all[path].Timestamp})
				}
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "query acl config version for which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "query acl config version for specified cluster")
	return cmd
}
