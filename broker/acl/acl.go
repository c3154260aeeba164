// Package acl is the broker's plain ACL (aclEnable=true), compatible with RocketMQ 4.x "plain
// access" (PROTOCOL.md §12).
//
// The accounts come from a plain_acl.yml (aclFile): accessKey/secretKey pairs, each with an
// admin flag, default topic and group permissions, per-topic and per-group permissions
// (PUB, SUB, PUB|SUB, DENY) and an optional whiteRemoteAddress; plus globalWhiteRemoteAddresses.
// The file is re-read when it changes (Deps.WatchInterval); a file that does not parse or
// validate keeps the configuration in use and is reported once.
//
// Every request to the broker is checked before its processor runs, in Java's order
// (PlainPermissionManager.validate):
//
//  1. a remote address matching globalWhiteRemoteAddresses is allowed, unsigned;
//  2. the request must carry AccessKey, naming a configured account;
//  3. a remote address matching that account's whiteRemoteAddress is allowed (signature
//     and permissions are not checked, as in 4.x);
//  4. Signature must be Base64(HmacSHA1(secretKey, content)), content being the values of
//     every extFields entry but Signature, ordered by key, followed by the body;
//  5. admin-only request codes need admin: true;
//  6. the resources the request touches need the permissions its route names (the Rule of its
//     row in broker/routes.go).
//
// A refusal is answered NO_PERMISSION (16) with a remark saying what failed. Apache
// RocketMQ answers SYSTEM_ERROR (1) with the exception text instead (PROTOCOL.md
// appendix A); ringmq answers 16, the code that says what happened. The clients treat both as a
// failed call (the Go client retries a send on either).
//
// Signature variants accepted, all verified with a constant-time compare: the pinned Go
// client sends SecurityToken but leaves it out of the signed content (the Java client signs
// it), and Java brokers leave _UNIQUE_KEY_QUERY out of the content (4.9.x for requests of
// version ≤ 399, 5.x always) although a client may have signed it. So the content is tried
// with every extFields entry, then without SecurityToken and/or _UNIQUE_KEY_QUERY when they are
// present (the Go form first for Go clients). Leaving a field out of the signed content only
// lets a man in the middle change that field; ringmq authorizes nothing by either.
//
// Resources checked (4.x PlainAccessResource.parse; the acl field of each route, broker/routes.go):
//
//	code                          resource (permission)
//	10, 324  send                 topic (PUB); a %RETRY% topic needs SUB on that group
//	310, 320, 325  send V2/batch  b (PUB); likewise for %RETRY% topics
//	36   send back                group (SUB)
//	11, 361  pull                 topic (SUB), consumerGroup (SUB)
//	12   query message            topic (SUB)
//	34   heartbeat                every consumer group (SUB) and subscribed topic (SUB)
//	35, 38  unregister, consumers consumerGroup (SUB)
//	15   update offset            consumerGroup (SUB), topic (SUB)
//	17, 25, 200, 207, 215, 513    admin only
//	50, 51, 52, 53                admin only (the ACL's own admin requests: plane.go)
//
// A group's permission is its groupPerms entry, else defaultGroupPerm; a topic's is its
// topicPerms entry, else defaultTopicPerm (a %RETRY%<group> topic is the group). An admin
// account without any topicPerms or groupPerms may do everything (Java's rule). Unknown keys
// in the file are ignored, as Java does; 5.x-only keys (resourcePerms, namespacePerms) have
// no effect.
//
// Hot path: one account lookup, one sort of the extFields keys and one HMAC-SHA1 over the
// header values and body, with pooled buffers and HMAC states: no heap allocation per
// request (TestACLSendCheckAllocs); 0.9 µs for a send with a 128-byte body, 2.8 µs with
// 4 KiB (BenchmarkACLCheckSend), about 1 µs more per KiB. It runs inline on the event loop,
// so a 4 MiB batch costs that loop about 3 ms.
package acl

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
)

// ErrFile wraps every problem with the ACL file.
var ErrFile = errors.New("broker: acl file")

// Fields the clients add to a signed request (Java SessionCredentials).
const (
	aclAccessKeyField     = "AccessKey"
	aclSignatureField     = "Signature"
	aclSecurityTokenField = "SecurityToken"
	aclUniqueKeyQuery     = "_UNIQUE_KEY_QUERY" // Java MixAll.UNIQUE_MSG_QUERY_FLAG
)

// aclKeyMinLength: Java refuses an accessKey or secretKey of 6 characters or fewer
// (AclConstants.ACCESS_KEY_MIN_LENGTH = 6, checked with <=).
const aclKeyMinLength = 6

// DefaultWatchInterval is how often the ACL file is looked at: one stat, and a read only
// when its size or modification time changed (or it changed within aclRacyWindow).
const DefaultWatchInterval = time.Second

// aclRacyWindow: a file modified this recently is re-read even with an unchanged stamp,
// because a second write within the file system's timestamp granularity, keeping the
// size, leaves the stamp as it was (git's "racy" index entries).
const aclRacyWindow = 2 * time.Second

// aclPerm is a permission as Java's Permission class encodes it.
type aclPerm uint8

const (
	aclDeny aclPerm = 1
	aclAny  aclPerm = 2
	aclPub  aclPerm = 4
	aclSub  aclPerm = 8
)

// String names the permission as the ACL file does.
func (p aclPerm) String() string {
	switch p {
	case aclDeny:
		return "DENY"
	case aclAny:
		return "ANY"
	case aclPub:
		return "PUB"
	case aclSub:
		return "SUB"
	case aclPub | aclSub:
		return "PUB|SUB"
	}
	return "aclPerm(" + strconv.Itoa(int(p)) + ")"
}

// allows is Java's Permission.checkPermission(needed, owned).
func (p aclPerm) allows(needed aclPerm) bool {
	if p&aclDeny != 0 {
		return false
	}
	if needed&aclAny != 0 {
		return p&(aclPub|aclSub) != 0
	}
	return needed&p != 0
}

// parseACLPerm reads DENY, PUB, SUB, PUB|SUB or SUB|PUB. Java maps anything else (and a
// missing value) to DENY silently; ringmq refuses a misspelt value instead, so that a typo
// does not lock a client out unnoticed. Empty means DENY, as in Java.
func parseACLPerm(s string) (aclPerm, error) {
	switch strings.TrimSpace(s) {
	case "", "DENY":
		return aclDeny, nil
	case "PUB":
		return aclPub, nil
	case "SUB":
		return aclSub, nil
	case "PUB|SUB", "SUB|PUB":
		return aclPub | aclSub, nil
	}
	return 0, fmt.Errorf("permission %q: want DENY, PUB, SUB or PUB|SUB", s)
}

// plainACLFile is plain_acl.yml as RocketMQ 4.x reads it. dataVersion is what its admin
// requests write there (a list holding one version).
type plainACLFile struct {
	GlobalWhiteRemoteAddresses []string          `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []plainACLAccount `yaml:"accounts"`
	DataVersion                []DataVersion     `yaml:"dataVersion"`
}

type plainACLAccount struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

// aclConfig is one parsed, validated ACL file. Immutable once built; shared by all event
// loops through Validator.current.
type aclConfig struct {
	globalWhite []addrPattern
	accounts    map[string]*aclAccount
	// version is the file's dataVersion; without one (versioned false) its counter is 0 and
	// its timestamp the time it was loaded, as Java's new DataVersion() at each load.
	version   DataVersion
	versioned bool
	empty     bool // the file holds nothing: Java lists no version for it
}

// aclAccount is one account with its permissions precomputed for lookups.
type aclAccount struct {
	accessKey    string
	white        *addrPattern // nil: no whiteRemoteAddress
	admin        bool
	defaultTopic aclPerm
	defaultGroup aclPerm
	topics       map[string]aclPerm
	groups       map[string]aclPerm // by group name (Java keys them %RETRY%<group>)
	unrestricted bool               // admin without any topicPerms/groupPerms (Java: all allowed)
	macs         sync.Pool          // hash.Hash: HMAC-SHA1 keyed with the secretKey
}

// parseACL parses and validates a plain_acl.yml. An empty file is valid: no accounts and no
// white list, so every request is refused (Java does the same).
func parseACL(data []byte) (*aclConfig, error) {
	var f plainACLFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFile, err)
	}
	cfg := &aclConfig{accounts: make(map[string]*aclAccount, len(f.Accounts))}
	if len(f.DataVersion) > 0 {
		cfg.version, cfg.versioned = f.DataVersion[0], true
	}
	var probe any
	cfg.empty = yaml.Unmarshal(data, &probe) == nil && probe == nil
	for i, s := range f.GlobalWhiteRemoteAddresses {
		if s = strings.TrimSpace(s); s == "" {
			continue // Java: a blank pattern matches nothing
		}
		p, err := parseAddrPattern(s)
		if err != nil {
			return nil, fmt.Errorf("%w: globalWhiteRemoteAddresses[%d]: %w", ErrFile, i, err)
		}
		cfg.globalWhite = append(cfg.globalWhite, p)
	}
	for i, a := range f.Accounts {
		acct, err := buildACLAccount(&a)
		if err != nil {
			return nil, fmt.Errorf("%w: accounts[%d] (accessKey %q): %w", ErrFile, i, a.AccessKey, err)
		}
		if _, dup := cfg.accounts[acct.accessKey]; dup {
			return nil, fmt.Errorf("%w: accounts[%d]: accessKey %q is configured twice", ErrFile, i, a.AccessKey)
		}
		cfg.accounts[acct.accessKey] = acct
	}
	return cfg, nil
}

func buildACLAccount(a *plainACLAccount) (*aclAccount, error) {
	if len(a.AccessKey) <= aclKeyMinLength {
		return nil, fmt.Errorf("accessKey must be longer than %d characters", aclKeyMinLength)
	}
	if len(a.SecretKey) <= aclKeyMinLength {
		return nil, fmt.Errorf("secretKey must be longer than %d characters", aclKeyMinLength)
	}
	acct := &aclAccount{
		accessKey: a.AccessKey,
		admin:     a.Admin,
		topics:    make(map[string]aclPerm, len(a.TopicPerms)),
		groups:    make(map[string]aclPerm, len(a.GroupPerms)),
	}
	if w := strings.TrimSpace(a.WhiteRemoteAddress); w != "" {
		p, err := parseAddrPattern(w)
		if err != nil {
			return nil, fmt.Errorf("whiteRemoteAddress: %w", err)
		}
		acct.white = &p
	}
	var err error
	if acct.defaultTopic, err = parseACLPerm(a.DefaultTopicPerm); err != nil {
		return nil, fmt.Errorf("defaultTopicPerm: %w", err)
	}
	if acct.defaultGroup, err = parseACLPerm(a.DefaultGroupPerm); err != nil {
		return nil, fmt.Errorf("defaultGroupPerm: %w", err)
	}
	for i, entry := range a.TopicPerms {
		name, perm, err := parseResourcePerm(entry)
		if err != nil {
			return nil, fmt.Errorf("topicPerms[%d]: %w", i, err)
		}
		if group, ok := strings.CutPrefix(name, metadata.RetryGroupTopicPrefix); ok {
			acct.groups[group] = perm // Java keeps both in one map, keyed by the retry topic
		} else {
			acct.topics[name] = perm
		}
	}
	for i, entry := range a.GroupPerms {
		name, perm, err := parseResourcePerm(entry)
		if err != nil {
			return nil, fmt.Errorf("groupPerms[%d]: %w", i, err)
		}
		acct.groups[name] = perm
	}
	acct.unrestricted = acct.admin && len(a.TopicPerms) == 0 && len(a.GroupPerms) == 0
	secret := []byte(a.SecretKey)
	acct.macs.New = func() any { return hmac.New(sha1.New, secret) }
	return acct, nil
}

// parseResourcePerm reads "name=PERM".
func parseResourcePerm(entry string) (string, aclPerm, error) {
	name, perm, ok := strings.Cut(entry, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.Contains(perm, "=") {
		return "", 0, fmt.Errorf("%q: want name=PERM", entry)
	}
	p, err := parseACLPerm(perm)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", entry, err)
	}
	return name, p, nil
}

// topicPerm is the account's permission on a topic (a %RETRY% topic is its group).
func (a *aclAccount) topicPerm(topic string) (aclPerm, bool) {
	if group, ok := strings.CutPrefix(topic, metadata.RetryGroupTopicPrefix); ok {
		return a.groupPerm(group), true
	}
	if p, ok := a.topics[topic]; ok {
		return p, false
	}
	return a.defaultTopic, false
}

func (a *aclAccount) groupPerm(group string) aclPerm {
	if p, ok := a.groups[group]; ok {
		return p
	}
	return a.defaultGroup
}

// aclScratch is per-check working memory, pooled.
type aclScratch struct {
	keys    []string
	content []byte
	sig     [32]byte
	sum     [32]byte
}

// aclSignatureMaxLength is the Base64 length of an HMAC-SHA1.
var aclSignatureMaxLength = base64.StdEncoding.EncodedLen(sha1.Size)

// aclBase64 decodes Signature strictly: Java compares the Base64 text, so a variant whose
// unused trailing bits differ (same bytes, different text) must fail here too.
var aclBase64 = base64.StdEncoding.Strict()

// verifySignature checks Signature against the content variants described above.
func (a *aclAccount) verifySignature(cmd *codec.RemotingCommand, s *aclScratch) bool {
	sig, _ := cmd.Ext(aclSignatureField)
	if sig == "" || len(sig) > aclSignatureMaxLength {
		return false
	}
	n, err := aclBase64.Decode(s.sig[:], []byte(sig))
	if err != nil || n != sha1.Size {
		return false
	}
	s.keys = s.keys[:0]
	for k := range cmd.ExtAll() {
		if k != aclSignatureField {
			s.keys = append(s.keys, k)
		}
	}
	slices.Sort(s.keys)
	_, hasToken := cmd.Ext(aclSecurityTokenField)
	_, hasUniq := cmd.Ext(aclUniqueKeyQuery)
	// Bit 0: leave SecurityToken out; bit 1: leave _UNIQUE_KEY_QUERY out.
	order := [4]uint8{0, 1, 2, 3}
	if cmd.Language == codec.LanguageGo {
		order = [4]uint8{1, 0, 3, 2}
	}
	mac := a.macs.Get().(hash.Hash)
	defer a.macs.Put(mac)
	for _, omit := range order {
		if (omit&1 != 0 && !hasToken) || (omit&2 != 0 && !hasUniq) {
			continue
		}
		s.content = s.content[:0]
		for _, k := range s.keys {
			if (omit&1 != 0 && k == aclSecurityTokenField) || (omit&2 != 0 && k == aclUniqueKeyQuery) {
				continue
			}
			v, _ := cmd.Ext(k)
			s.content = append(s.content, v...)
		}
		mac.Reset()
		mac.Write(s.content)
		mac.Write(cmd.Body)
		if hmac.Equal(mac.Sum(s.sum[:0]), s.sig[:n]) {
			return true
		}
	}
	return false
}

// Rule is what the ACL requires of one request code (its route's acl field): an admin
// account (Java Permission.ADMIN_CODE), and the resources named by header fields or, for
// HEART_BEAT, by the body. The zero Rule requires a valid signature only.
type Rule struct {
	admin      bool
	send       bool   // topic is sent to: PUB, or SUB on the group of a %RETRY% topic
	topic      string // header field naming a topic needing SUB (PUB when send)
	group      string // header field naming a group needing SUB
	groupFirst bool   // check the group before the topic (UPDATE_CONSUMER_OFFSET's order)
	heartbeat  bool   // the body's consumer groups and their subscribed topics need SUB
}

// The rules the broker's routes name.
var (
	// Admin: an admin account only.
	Admin = Rule{admin: true}
	// Heartbeat: SUB on every consumer group of the body and on every topic they subscribe.
	Heartbeat = Rule{heartbeat: true}
	// TopicThenGroup: SUB on the "topic" field's topic, then on the "consumerGroup" field's group.
	TopicThenGroup = Rule{topic: "topic", group: "consumerGroup"}
	// GroupThenTopic: as TopicThenGroup, the group checked first (UPDATE_CONSUMER_OFFSET).
	GroupThenTopic = Rule{topic: "topic", group: "consumerGroup", groupFirst: true}
)

// SendTo: PUB on the topic the header field names (SUB on the group for a %RETRY% topic).
func SendTo(topicField string) Rule { return Rule{send: true, topic: topicField} }

// TopicOnly: SUB on the topic the header field names.
func TopicOnly(topicField string) Rule { return Rule{topic: topicField} }

// GroupOnly: SUB on the group the header field names.
func GroupOnly(groupField string) Rule { return Rule{group: groupField} }

// String describes the rule for the route table's review: "admin", "heartbeat body",
// "send <field>", "topic <field>, group <field>" (in the order checked), or "" for the zero
// rule.
func (r Rule) String() string {
	switch {
	case r.admin:
		return "admin"
	case r.heartbeat:
		return "heartbeat body"
	case r.send:
		return "send " + r.topic
	case r.topic != "" && r.group != "" && r.groupFirst:
		return "group " + r.group + ", topic " + r.topic
	case r.topic != "" && r.group != "":
		return "topic " + r.topic + ", group " + r.group
	case r.topic != "":
		return "topic " + r.topic
	case r.group != "":
		return "group " + r.group
	}
	return ""
}

// Reasons a request is refused (label of ringmq_broker_acl_denied_total).
const (
	aclDeniedNoAccessKey      = "no_access_key"
	aclDeniedUnknownAccessKey = "unknown_access_key"
	aclDeniedSignature        = "signature"
	aclDeniedAdmin            = "admin"
	aclDeniedPermission       = "permission"
	aclDeniedBadRequest       = "bad_request"
)

// Deps is what the validator needs.
type Deps struct {
	// File is the plain_acl.yml (aclFile).
	File string
	// WatchInterval is how often the file is looked at; 0: DefaultWatchInterval.
	WatchInterval time.Duration
	// RuleOf is the rule of a request code (its route's); nil or an unknown code: the zero
	// Rule.
	RuleOf func(code int32) Rule
	Logger *slog.Logger     // nil: discard
	Clock  func() time.Time // nil: time.Now; the timestamps of the file's dataVersion
	// Registerer takes ringmq_broker_acl_denied_total; nil: not registered.
	Registerer prometheus.Registerer
}

// Validator holds the ACL configuration in use and checks requests against it. Check is
// safe for concurrent use from every event loop; the configuration is swapped atomically by
// the watcher goroutine.
type Validator struct {
	path     string
	logger   *slog.Logger
	interval time.Duration
	ruleOf   func(code int32) Rule
	current  atomic.Pointer[aclConfig]
	denied   *prometheus.CounterVec
	scratch  sync.Pool // *aclScratch

	// mu serializes the file's readers and writers here: the watcher (reloadIfChanged) and the
	// admin requests' edits (edit.go). It guards the state below.
	mu        sync.Mutex
	clock     func() time.Time
	seen      aclFileStamp
	loadedSum [sha256.Size]byte
	lastErr   string // the problem reported last; the same one is not reported again

	started  atomic.Bool
	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
}

type aclFileStamp struct {
	modTime time.Time
	size    int64
}

func (s aclFileStamp) same(o aclFileStamp) bool {
	return s.modTime.Equal(o.modTime) && s.size == o.size
}

// New loads d.File; the broker does not start with a missing or invalid ACL file (once
// running, a bad edit keeps the previous configuration instead).
func New(d Deps) (*Validator, error) {
	path, logger, reg := d.File, d.Logger, d.Registerer
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if d.WatchInterval <= 0 {
		d.WatchInterval = DefaultWatchInterval
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.RuleOf == nil {
		d.RuleOf = func(int32) Rule { return Rule{} }
	}
	v := &Validator{
		path:     path,
		logger:   logger.With("component", "acl"),
		interval: d.WatchInterval,
		ruleOf:   d.RuleOf,
		clock:    d.Clock,
		stopCh:   make(chan struct{}),
		done:     make(chan struct{}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_acl_denied_total",
			Help: "Requests refused by the ACL (NO_PERMISSION), by reason and request code.",
		}, []string{"reason", "code"}),
	}
	v.scratch.New = func() any { return &aclScratch{keys: make([]string, 0, 32), content: make([]byte, 0, 1024)} }
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: aclEnable=true but aclFile %s: %w", ErrFile, path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: aclFile %s: %w", ErrFile, path, err)
	}
	cfg, err := parseACL(data)
	if err != nil {
		return nil, fmt.Errorf("aclFile %s: %w", path, err)
	}
	cfg.stampVersion(v.clock())
	v.current.Store(cfg)
	v.seen = aclFileStamp{modTime: st.ModTime(), size: st.Size()}
	v.loadedSum = sha256.Sum256(data)
	if reg != nil {
		if err := reg.Register(v.denied); err != nil {
			return nil, fmt.Errorf("broker: register acl metrics: %w", err)
		}
	}
	v.logger.Info("acl: loaded", "file", path, "accounts", len(cfg.accounts),
		"globalWhiteRemoteAddresses", len(cfg.globalWhite))
	return v, nil
}

// Check decides one request from remote. It returns "" when the request may proceed,
// else the remark for the NO_PERMISSION answer. It reads only memory and does not block.
func (v *Validator) Check(remote netip.Addr, cmd *codec.RemotingCommand) string {
	cfg := v.current.Load()
	remote = remote.Unmap().WithZone("")
	for i := range cfg.globalWhite {
		if cfg.globalWhite[i].match(remote) {
			return ""
		}
	}
	accessKey, _ := cmd.Ext(aclAccessKeyField)
	if accessKey == "" {
		return v.deny(cmd, aclDeniedNoAccessKey, fmt.Sprintf(
			"No accessKey is configured: the broker has aclEnable=true and request code %d from %s carries no AccessKey; configure the client's credentials",
			cmd.Code, remote))
	}
	acct := cfg.accounts[accessKey]
	if acct == nil {
		return v.deny(cmd, aclDeniedUnknownAccessKey, fmt.Sprintf("No acl config for %s", accessKey))
	}
	if acct.white != nil && acct.white.match(remote) {
		return ""
	}
	s := v.scratch.Get().(*aclScratch)
	ok := acct.verifySignature(cmd, s)
	v.scratch.Put(s)
	if !ok {
		why := "the Signature does not match the secretKey"
		if sig, _ := cmd.Ext(aclSignatureField); sig == "" {
			why = "the request carries no Signature"
		}
		return v.deny(cmd, aclDeniedSignature, fmt.Sprintf("Check signature failed for accessKey=%s: %s", accessKey, why))
	}
	rule := v.ruleOf(cmd.Code)
	if rule.admin && !acct.admin {
		return v.deny(cmd, aclDeniedAdmin, fmt.Sprintf("Need admin permission for request code=%d, but accessKey=%s is not", cmd.Code, accessKey))
	}
	if acct.unrestricted {
		return ""
	}
	return v.checkResources(acct, cmd, &rule)
}

// checkResources applies the request's rule to the resources it names.
func (v *Validator) checkResources(acct *aclAccount, cmd *codec.RemotingCommand, rule *Rule) string {
	ext := func(key string) string { v, _ := cmd.Ext(key); return v }
	if rule.heartbeat {
		return v.checkHeartbeat(acct, cmd)
	}
	if rule.group != "" && rule.groupFirst {
		if r := v.needGroup(cmd, acct, ext(rule.group), aclSub); r != "" {
			return r
		}
	}
	if rule.topic != "" {
		var r string
		if rule.send {
			r = v.needSend(cmd, acct, ext(rule.topic))
		} else {
			r = v.needTopic(cmd, acct, ext(rule.topic), aclSub)
		}
		if r != "" {
			return r
		}
	}
	if rule.group != "" && !rule.groupFirst {
		return v.needGroup(cmd, acct, ext(rule.group), aclSub)
	}
	return ""
}

// checkHeartbeat: SUB on every consumer group of the body and on every topic they subscribe.
func (v *Validator) checkHeartbeat(acct *aclAccount, cmd *codec.RemotingCommand) string {
	hb, err := codec.DecodeHeartbeatData(cmd.Body)
	if err != nil {
		// Java's check fails the same way: without the body, the groups are unknown.
		return v.deny(cmd, aclDeniedBadRequest, fmt.Sprintf("ACL check of HEART_BEAT: body: %v", err))
	}
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		if r := v.needGroup(cmd, acct, cd.GroupName, aclSub); r != "" {
			return r
		}
		for j := range cd.SubscriptionDataSet {
			if r := v.needTopic(cmd, acct, cd.SubscriptionDataSet[j].Topic, aclSub); r != "" {
				return r
			}
		}
	}
	return ""
}

// needSend: PUB on the topic, or SUB on the group for a %RETRY% topic (a consumer sending a
// message back by itself).
func (v *Validator) needSend(cmd *codec.RemotingCommand, acct *aclAccount, topic string) string {
	if strings.HasPrefix(topic, metadata.RetryGroupTopicPrefix) {
		return v.needTopic(cmd, acct, topic, aclSub)
	}
	return v.needTopic(cmd, acct, topic, aclPub)
}

// needTopic: an empty name is left for the processor to refuse as a missing field.
func (v *Validator) needTopic(cmd *codec.RemotingCommand, acct *aclAccount, topic string, need aclPerm) string {
	if topic == "" {
		return ""
	}
	owned, isGroup := acct.topicPerm(topic)
	if owned.allows(need) {
		return ""
	}
	kind, name := "topic", topic
	if isGroup {
		kind, name = "group", strings.TrimPrefix(topic, metadata.RetryGroupTopicPrefix)
	}
	return v.denyResource(cmd, acct, kind, name, need, owned)
}

func (v *Validator) needGroup(cmd *codec.RemotingCommand, acct *aclAccount, group string, need aclPerm) string {
	if group == "" {
		return ""
	}
	owned := acct.groupPerm(group)
	if owned.allows(need) {
		return ""
	}
	return v.denyResource(cmd, acct, "group", group, need, owned)
}

func (v *Validator) denyResource(cmd *codec.RemotingCommand, acct *aclAccount, kind, name string, need, owned aclPerm) string {
	return v.deny(cmd, aclDeniedPermission, fmt.Sprintf("No permission for %s:%s: needs %s, accessKey=%s has %s",
		kind, name, need, acct.accessKey, owned))
}

func (v *Validator) deny(cmd *codec.RemotingCommand, reason, remark string) string {
	v.denied.WithLabelValues(reason, aclCodeLabel(cmd.Code)).Inc()
	return remark
}

// aclCodeLabel names a request code for the metric; codes codec does not know share one
// label, so that unsigned junk cannot grow the metric without bound.
func aclCodeLabel(code int32) string {
	name := codec.RequestCode(code).String()
	if strings.HasPrefix(name, "RequestCode(") {
		return "other"
	}
	return name
}

// Start runs the watcher: the file is looked at every interval until Stop.
func (v *Validator) Start() error {
	v.started.Store(true)
	go v.watch()
	return nil
}

// Stop ends the watcher and waits for it (or ctx). Idempotent; a no-op before Start.
func (v *Validator) Stop(ctx context.Context) error {
	v.stopOnce.Do(func() { close(v.stopCh) })
	if !v.started.Load() {
		return nil
	}
	select {
	case <-v.done:
		return nil
	case <-ctx.Done():
		return errors.New("broker: acl file watcher did not stop in time")
	}
}

func (v *Validator) watch() {
	defer close(v.done)
	t := time.NewTicker(v.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			v.reloadIfChanged()
		case <-v.stopCh:
			return
		}
	}
}

// reloadIfChanged re-reads the file if its stamp changed (or it changed very recently),
// and swaps the configuration in when the content differs and is valid. A problem (missing
// file, parse or validation error) keeps the configuration in use and is logged once. Safe
// for concurrent use with the edits.
func (v *Validator) reloadIfChanged() {
	v.mu.Lock()
	defer v.mu.Unlock()
	st, err := os.Stat(v.path)
	if err != nil {
		v.problem(fmt.Sprintf("cannot stat the ACL file: %v", err))
		return
	}
	stamp := aclFileStamp{modTime: st.ModTime(), size: st.Size()}
	if stamp.same(v.seen) && time.Since(stamp.modTime) > aclRacyWindow {
		return
	}
	data, err := os.ReadFile(v.path)
	if err != nil {
		v.problem(fmt.Sprintf("cannot read the ACL file: %v", err))
		return
	}
	v.seen = stamp
	sum := sha256.Sum256(data)
	if sum == v.loadedSum {
		v.lastErr = "" // back to the content in use
		return
	}
	cfg, err := parseACL(data)
	if err != nil {
		v.problem(err.Error())
		return
	}
	cfg.stampVersion(v.clock())
	v.current.Store(cfg)
	v.loadedSum = sum
	v.lastErr = ""
	v.logger.Info("acl: reloaded", "file", v.path, "accounts", len(cfg.accounts),
		"globalWhiteRemoteAddresses", len(cfg.globalWhite))
}

func (v *Validator) problem(msg string) {
	if msg == v.lastErr {
		return
	}
	v.lastErr = msg
	v.logger.Error("acl: keeping the configuration in use", "file", v.path, "err", msg)
}

// addrPattern is one whiteRemoteAddress / globalWhiteRemoteAddresses entry (Java
// RemoteAddressStrategyFactory):
//
//   - *.*.*.*  *:*:*:*:*:*:*:*     every address
//     192.168.0.1  ::1                one address
//     192.168.1.{1,2,3}  fe80::{1,2}  a set differing in the last segment
//     10.0.0.1,10.0.0.2               a list
//     192.168.*.*  10.1.1-100.*       IPv4 with * or a-b (decimal) segments
//     1050:0:0:0:5:600:300c:*         IPv6 likewise (hexadecimal, :: allowed)
//
// Java allows * and ranges only after a run of exact segments and before a run of *; this
// matcher takes any segment form anywhere, which means the same for every pattern Java
// accepts.
type addrPattern struct {
	any    bool
	addrs  []netip.Addr // exact addresses
	ranged bool
	v4     bool      // range pattern family
	lo, hi [8]uint16 // per segment bounds: 4 for IPv4, 8 for IPv6
	text   string    // as written, for messages
}

func parseAddrPattern(s string) (addrPattern, error) {
	p := addrPattern{text: s}
	switch s {
	case "*", "*.*.*.*", "*:*:*:*:*:*:*:*":
		p.any = true
		return p, nil
	}
	var items []string
	switch {
	case strings.HasSuffix(s, "}"):
		open := strings.LastIndexByte(s, '{')
		if open <= 0 || (s[open-1] != '.' && s[open-1] != ':') {
			return p, fmt.Errorf("address pattern %q: a {a,b} set must be the last segment", s)
		}
		for _, last := range strings.Split(s[open+1:len(s)-1], ",") {
			items = append(items, s[:open]+strings.TrimSpace(last))
		}
	case strings.Contains(s, ","):
		for _, item := range strings.Split(s, ",") {
			items = append(items, strings.TrimSpace(item))
		}
	case strings.ContainsAny(s, "*-"):
		return p, p.parseRange()
	default:
		items = []string{s}
	}
	for _, item := range items {
		a, err := netip.ParseAddr(item)
		if err != nil {
			return p, fmt.Errorf("address pattern %q: %q is not an IP address", s, item)
		}
		p.addrs = append(p.addrs, a.Unmap().WithZone(""))
	}
	return p, nil
}

func (p *addrPattern) parseRange() error {
	s := p.text
	p.ranged = true
	var segs []string
	base, maxSeg := 16, uint64(0xffff)
	switch left, right, ok := strings.Cut(s, "::"); {
	case !strings.Contains(s, ":"):
		p.v4, base, maxSeg = true, 10, 255
		if segs = strings.Split(s, "."); len(segs) != 4 {
			return fmt.Errorf("address pattern %q: an IPv4 pattern has 4 segments", s)
		}
	case ok:
		var l, r []string
		if left != "" {
			l = strings.Split(left, ":")
		}
		if right != "" {
			r = strings.Split(right, ":")
		}
		missing := 8 - len(l) - len(r)
		if missing < 1 {
			return fmt.Errorf("address pattern %q: too many segments", s)
		}
		segs = append(append(append(segs, l...), slices.Repeat([]string{"0"}, missing)...), r...)
	default:
		segs = strings.Split(s, ":")
	}
	if !p.v4 && len(segs) != 8 {
		return fmt.Errorf("address pattern %q: an IPv6 pattern has 8 segments", s)
	}
	for i, seg := range segs {
		lo, hi, err := parseSegment(seg, base, maxSeg)
		if err != nil {
			return fmt.Errorf("address pattern %q: segment %d: %w", s, i+1, err)
		}
		p.lo[i], p.hi[i] = lo, hi
	}
	return nil
}

// parseSegment reads "*", "a-b" or "a" in base, each at most max.
func parseSegment(seg string, base int, max uint64) (lo, hi uint16, err error) {
	seg = strings.TrimSpace(seg)
	if seg == "*" {
		return 0, uint16(max), nil
	}
	num := func(s string) (uint16, error) {
		n, err := strconv.ParseUint(s, base, 16)
		if err != nil || n > max || s == "" {
			return 0, fmt.Errorf("%q is not a number 0..%s", s, strconv.FormatUint(max, base))
		}
		return uint16(n), nil
	}
	if a, b, ok := strings.Cut(seg, "-"); ok {
		if lo, err = num(a); err != nil {
			return 0, 0, err
		}
		if hi, err = num(b); err != nil {
			return 0, 0, err
		}
		if lo > hi {
			return 0, 0, fmt.Errorf("range %q is empty", seg)
		}
		return lo, hi, nil
	}
	lo, err = num(seg)
	return lo, lo, err
}

// match reports whether a (unmapped, no zone) matches the pattern.
func (p *addrPattern) match(a netip.Addr) bool {
	if p.any {
		return true
	}
	for _, x := range p.addrs {
		if x == a {
			return true
		}
	}
	if !p.ranged {
		return false
	}
	if p.v4 {
		if !a.Is4() {
			return false
		}
		b := a.As4()
		for i, x := range b {
			if uint16(x) < p.lo[i] || uint16(x) > p.hi[i] {
				return false
			}
		}
		return true
	}
	if !a.Is6() {
		return false
	}
	b := a.As16()
	for i := range 8 {
		x := uint16(b[2*i])<<8 | uint16(b[2*i+1])
		if x < p.lo[i] || x > p.hi[i] {
			return false
		}
	}
	return true
}
