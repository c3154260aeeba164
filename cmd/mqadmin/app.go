package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
	"github.com/ringmq/ringmq/internal/version"
)

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

// usageError is a command-line mistake, reported with the command's name.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// app is one mqadmin run: the global flags, the client and where output goes.
type app struct {
	out    io.Writer
	getenv func(string) string
	now    func() time.Time
	loc    *time.Location // time zone of human-readable times (local, as RocketMQ prints them)

	namesrvAddr string
	output      string
	timeout     time.Duration
	creds       adminclient.Credentials

	client *adminclient.Client
}

// run is the whole command: it returns the exit status (0 ok, 1 failed, 2 bad usage).
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{out: stdout, getenv: getenv, now: time.Now, loc: time.Local}
	return a.run(args, stderr)
}

func (a *app) run(args []string, stderr io.Writer) int {
	root := a.rootCommand()
	root.SetArgs(translateTwoLetterFlags(args))
	root.SetOut(a.out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if a.client != nil {
		_ = a.client.Close() // nothing is pending once the command has returned
	}
	if err == nil {
		return 0
	}
	name := "mqadmin"
	if cmd != nil && cmd != root {
		name += " " + cmd.Name()
	}
	// Errors from a command's work are runErrors; anything else cobra returned (unknown
	// command or flag, missing required flag, stray argument) is a usage mistake.
	var re runError
	usage := !errors.As(err, &re) || errors.Is(err, errUsage)
	fmt.Fprintf(stderr, "%s: %s\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	if usage {
		return 2
	}
	return 1
}

// runError marks an error returned by a command's RunE.
type runError struct{ error }

func (e runError) Unwrap() error { return e.error }

// rootCommand builds the command tree.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "mqadmin",
		Short: "Administer a RocketMQ-compatible cluster (ringmq or Apache RocketMQ 4.x)",
		Long: "mqadmin speaks RocketMQ's remoting protocol to name servers and brokers, with the command\n" +
			"names and flags of RocketMQ's mqadmin. -n defaults to $NAMESRV_ADDR.",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != "text" && a.output != "json" {
				return usageError("--output %q: allowed values are text and json", a.output)
			}
			if a.timeout <= 0 {
				return usageError("--timeout %v: must be positive", a.timeout)
			}
			a.client = adminclient.New(a.timeout)
			creds, err := a.credentials()
			if err != nil {
				return err
			}
			a.client.Credentials = creds
			return nil
		},
	}
	root.SetVersionTemplate("mqadmin {{.Version}}\n") // the --version line of every ringmq binary (internal/version)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.namesrvAddr, "namesrvAddr", "n", "",
		"name server address list, e.g. '192.168.0.1:9876;192.168.0.2:9876' (default $NAMESRV_ADDR)")
	pf.StringVar(&a.output, "output", "text", "output format: text (RocketMQ's tables) or json")
	pf.DurationVar(&a.timeout, "timeout", adminclient.DefaultTimeout, "timeout of each request")
	pf.StringVar(&a.creds.AccessKey, "accessKey", "", "ACL access key (default: accessKey of $ROCKETMQ_HOME/conf/tools.yml)")
	pf.StringVar(&a.creds.SecretKey, "secretKey", "", "ACL secret key (default: secretKey of $ROCKETMQ_HOME/conf/tools.yml)")
	root.AddCommand(
		a.clusterListCommand(), a.brokerStatusCommand(), a.getBrokerConfigCommand(), a.updateBrokerConfigCommand(),
		a.updateKvConfigCommand(),
		a.getControllerMetaDataCommand(), a.getSyncStateSetCommand(), a.getBrokerEpochCommand(), a.electMasterCommand(),
		a.cleanBrokerMetadataCommand(), a.getControllerConfigCommand(), a.updateControllerConfigCommand(),
		a.topicListCommand(), a.topicRouteCommand(), a.topicStatusCommand(), a.updateTopicCommand(), a.deleteTopicCommand(),
		a.updateSubGroupCommand(), a.deleteSubGroupCommand(), a.consumerProgressCommand(),
		a.consumerConnectionCommand(), a.producerConnectionCommand(), a.resetOffsetByTimeCommand(), a.cloneGroupOffsetCommand(),
		a.queryCqCommand(), a.cleanExpiredCQCommand(), a.consumerStatusCommand(), a.statsAllCommand(),
		a.brokerConsumeStatsCommand(),
		a.queryMsgByIDCommand(), a.queryMsgByKeyCommand(), a.queryMsgByOffsetCommand(), a.queryMsgByUniqueKeyCommand(),
		a.sendMessageCommand(), a.consumeMessageCommand(), a.printMsgCommand(),
		a.updateAclConfigCommand(), a.deleteAclConfigCommand(), a.updateGlobalWhiteAddrCommand(),
		a.clusterAclConfigVersionCommand(),
	)
	for _, c := range root.Commands() {
		c.Args = cobra.NoArgs
		runE := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := runE(cmd, args); err != nil {
				return runError{err}
			}
			return nil
		}
	}
	return root
}

// result is what a command prints: text renders RocketMQ's form; the value itself is
// marshalled for --output json, so its json tags are the stable field names.
type result interface {
	text(w io.Writer) error
}

// emit prints r in the chosen format.
func (a *app) emit(r result) error {
	if a.output == "json" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = a.out.Write(append(b, '\n'))
		return err
	}
	return r.text(a.out)
}

// credentials returns --accessKey/--secretKey, else those of $ROCKETMQ_HOME/conf/tools.yml
// as RocketMQ's mqadmin reads them, else none (requests go unsigned).
func (a *app) credentials() (adminclient.Credentials, error) {
	if a.creds.AccessKey != "" || a.creds.SecretKey != "" {
		if a.creds.AccessKey == "" || a.creds.SecretKey == "" {
			return adminclient.Credentials{}, usageError("--accessKey and --secretKey go together")
		}
		return a.creds, nil
	}
	home := a.getenv("ROCKETMQ_HOME")
	if home == "" {
		return adminclient.Credentials{}, nil
	}
	path := filepath.Join(home, "conf", "tools.yml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return adminclient.Credentials{}, nil
	}
	if err != nil {
		return adminclient.Credentials{}, err
	}
	var file struct {
		AccessKey string `yaml:"accessKey"`
		SecretKey string `yaml:"secretKey"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return adminclient.Credentials{}, fmt.Errorf("%s: %w", path, err)
	}
	return adminclient.Credentials{AccessKey: file.AccessKey, SecretKey: file.SecretKey}, nil
}

// nameServers returns -n or $NAMESRV_ADDR split on ';'.
func (a *app) nameServers() ([]string, error) {
	list := a.namesrvAddr
	if list == "" {
		list = a.getenv("NAMESRV_ADDR")
	}
	var out []string
	for _, s := range strings.Split(list, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, usageError("no name server: give -n 'host:port;host:port' or set NAMESRV_ADDR")
	}
	return out, nil
}

// header is a typed request header of package codec.
type header interface{ Encode(map[string]string) }

// request builds a request with h's keys (h may be nil).
func request(code codec.RequestCode, h header, body []byte) *codec.RemotingCommand {
	ext := map[string]string{}
	if h != nil {
		h.Encode(ext)
	}
	return codec.NewRequest(code, ext, body)
}

// forWhat renders " for <what>" (empty when what is).
func forWhat(what string) string {
	if what == "" {
		return ""
	}
	return " for " + what
}

// askBroker sends a request to a broker and checks the response code (SUCCESS unless ok
// names others). what says what was asked ("topic \"T\""), for errors.
func (a *app) askBroker(addr string, code codec.RequestCode, h header, body []byte, what string,
	ok ...codec.ResponseCode) (*codec.RemotingCommand, error) {
	return a.ask("broker "+addr, addr, request(code, h, body), what, ok)
}

func (a *app) ask(peer, addr string, req *codec.RemotingCommand, what string, ok []codec.ResponseCode) (*codec.RemotingCommand, error) {
	code := codec.RequestCode(req.Code)
	resp, err := a.client.Call(addr, req)
	if err != nil {
		var te *adminclient.TransportError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s did not answer %s%s: %w", peer, code, forWhat(what), te.Err)
		}
		return nil, err
	}
	if err := adminclient.Check(peer, resp, ok...); err != nil {
		var re *adminclient.ResponseError
		if errors.As(err, &re) {
			re.What = what
		}
		return nil, err
	}
	return resp, nil
}

// isTopicNotExist says err is a TOPIC_NOT_EXIST answer.
func isTopicNotExist(err error) bool {
	var re *adminclient.ResponseError
	return errors.As(err, &re) && re.Code == codec.ResponseTopicNotExist
}

// askNamesrv sends a request to the name servers in turn until one answers (RocketMQ's
// clients fail over the same way); an answer with a code not in ok is an error at once.
func (a *app) askNamesrv(code codec.RequestCode, h header, body []byte, what string,
	ok ...codec.ResponseCode) (*codec.RemotingCommand, error) {
	servers, err := a.nameServers()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ns := range servers {
		resp, err := a.ask("name server "+ns, ns, request(code, h, body), what, ok)
		var re *adminclient.ResponseError
		if err == nil || errors.As(err, &re) {
			return resp, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// askEveryNamesrv sends a request to every name server (a change each must see).
func (a *app) askEveryNamesrv(code codec.RequestCode, h header, body []byte, what string) ([]string, error) {
	servers, err := a.nameServers()
	if err != nil {
		return nil, err
	}
	for _, ns := range servers {
		if _, err := a.ask("name server "+ns, ns, request(code, h, body), what, nil); err != nil {
			return nil, err
		}
	}
	return servers, nil
}

// clusterInfo asks the name servers for the cluster table.
func (a *app) clusterInfo() (*codec.ClusterInfo, error) {
	resp, err := a.askNamesrv(codec.RequestGetBrokerClusterInfo, nil, nil, "")
	if err != nil {
		return nil, err
	}
	ci, err := codec.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("cluster info from the name server: %w", err)
	}
	return ci, nil
}

// topicRoute asks the name servers for a topic's route.
func (a *app) topicRoute(topic string) (*codec.TopicRouteData, error) {
	resp, err := a.askNamesrv(codec.RequestGetRouteInfoByTopic,
		&codec.GetRouteInfoRequestHeader{Topic: topic, AcceptStandardJSONOnly: true}, nil, fmt.Sprintf("topic %q", topic))
	if err != nil {
		return nil, err
	}
	rd, err := codec.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("route of topic %q: %w", topic, err)
	}
	return rd, nil
}

// brokerRef is one broker process: its name, id (0 = master) and address.
type brokerRef struct {
	Cluster string
	Name    string
	ID      int64
	Addr    string
}

// brokersOf lists the brokers of a cluster (masters only unless withSlaves), by broker name
// then id. An unknown cluster is an error naming the known ones.
func brokersOf(ci *codec.ClusterInfo, cluster string, withSlaves bool) ([]brokerRef, error) {
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		known := make([]string, 0, len(ci.ClusterAddrTable))
		for c := range ci.ClusterAddrTable {
			known = append(known, c)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("cluster %q is not in the name servers' cluster table (known: %s)", cluster, strings.Join(known, ", "))
	}
	var out []brokerRef
	for _, name := range slices.Sorted(slices.Values(names)) {
		bd := ci.BrokerAddrTable[name]
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			if id == 0 || withSlaves {
				out = append(out, brokerRef{Cluster: cluster, Name: name, ID: id, Addr: bd.BrokerAddrs[id]})
			}
		}
	}
	return out, nil
}

// routeMasters lists the master of each broker name in a route, by broker name.
func routeMasters(rd *codec.TopicRouteData) []brokerRef {
	var out []brokerRef
	for _, bd := range rd.BrokerDatas {
		if addr, ok := bd.BrokerAddrs[0]; ok {
			out = append(out, brokerRef{Cluster: bd.Cluster, Name: bd.BrokerName, Addr: addr})
		}
	}
	slices.SortFunc(out, func(x, y brokerRef) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// brokerNameOf finds an address's broker name in the cluster table.
func brokerNameOf(ci *codec.ClusterInfo, addr string) (string, bool) {
	for name, bd := range ci.BrokerAddrTable {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return name, true
			}
		}
	}
	return "", false
}

// humanTime renders ms since the epoch as RocketMQ's timeMillisToHumanString2
// ("2006-01-02 15:04:05,000").
func (a *app) humanTime(ms int64) string {
	return time.UnixMilli(ms).In(a.loc).Format("2006-01-02 15:04:05,000")
}

// parseTimestamp reads RocketMQ's timestamp forms: "now", milliseconds since the epoch, or
// yyyy-MM-dd#HH:mm:ss:SSS in local time.
func (a *app) parseTimestamp(flag, s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return a.now().UnixMilli(), nil
	}
	var ms int64
	if _, err := fmt.Sscanf(s, "%d", &ms); err == nil && fmt.Sprint(ms) == s {
		return ms, nil
	}
	// Go layouts know fractional seconds only after '.' or ','; RocketMQ writes ":SSS".
	dotted := s
	if i := strings.LastIndexByte(s, ':'); i > 0 && len(s)-i == 4 {
		dotted = s[:i] + "." + s[i+1:]
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05.000", dotted, a.loc)
	if err != nil || dotted == s {
		return 0, usageError("-%s %q: want now, milliseconds since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS", flag, s)
	}
	return t.UnixMilli(), nil
}
