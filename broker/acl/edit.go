package acl

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ringmq/ringmq/internal/fsutil"
)

// Editing the ACL file remotely (UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG), as RocketMQ 4.9.8's PlainPermissionManager does:
//
//   - an account is found by accessKey; an update changes the keys the request carries and
//     keeps the account's other keys (its unknown ones too), and the account moves to the end
//     of the list; a new account is appended;
//   - a delete removes the account; an unknown accessKey is refused;
//   - the global white list is replaced as a whole;
//   - every edit advances the file's dataVersion (counter + 1, timestamp now), written as
//     `dataVersion: [{counter: N, timestamp: ms}]`.
//
// The rest of the file stays as it was: other accounts, unknown keys, key order (and, unlike
// Java, comments). What is written must load: an edit that would give a file the broker
// refuses (a bad address pattern, a misspelt permission) is refused and nothing changes.
// The file is replaced atomically (a temp file, fsync, rename, fsync of the directory) with
// its permission bits kept, and the new configuration is in use when the edit returns; the
// watcher then finds the content it already has. Edits are serialized with each other and
// with the watcher.

// DataVersion is the version of an ACL file (Java's 4.x DataVersion: its JSON has exactly
// these two fields).
type DataVersion struct {
	Counter   int64 `json:"counter" yaml:"counter"`
	Timestamp int64 `json:"timestamp" yaml:"timestamp"` // ms since the epoch
}

// stampVersion gives an unversioned configuration the load time, as Java's new DataVersion().
func (c *aclConfig) stampVersion(now time.Time) {
	if !c.versioned {
		c.version = DataVersion{Timestamp: now.UnixMilli()}
	}
}

// AccessConfig is one account as UPDATE_AND_CREATE_ACL_CONFIG carries it (Java's
// PlainAccessConfig). A nil WhiteRemoteAddress, TopicPerms or GroupPerms, and an empty
// DefaultTopicPerm or DefaultGroupPerm, leave the account's value as it is; Admin is always
// written.
type AccessConfig struct {
	AccessKey          string
	SecretKey          string
	WhiteRemoteAddress *string
	Admin              bool
	DefaultTopicPerm   string
	DefaultGroupPerm   string
	TopicPerms         []string
	GroupPerms         []string
}

// EditRefused is an edit the request asked for wrongly; its text is the answer's remark
// (Java's AclException message where Java has one).
type EditRefused struct{ Remark string }

func (e *EditRefused) Error() string { return e.Remark }

// File keys, as Java's AclConstants names them.
const (
	keyAccounts           = "accounts"
	keyGlobalWhite        = "globalWhiteRemoteAddresses"
	keyDataVersion        = "dataVersion"
	keyAccessKey          = "accessKey"
	keySecretKey          = "secretKey"
	keyWhiteRemoteAddress = "whiteRemoteAddress"
	keyAdmin              = "admin"
	keyDefaultTopicPerm   = "defaultTopicPerm"
	keyDefaultGroupPerm   = "defaultGroupPerm"
	keyTopicPerms         = "topicPerms"
	keyGroupPerms         = "groupPerms"
)

// UpdateAccessConfig creates or updates an account (see the file comment). An
// *EditRefused names what is wrong with c; any other error is the file's.
func (v *Validator) UpdateAccessConfig(c AccessConfig) error {
	if err := checkAccessConfig(c); err != nil {
		return err
	}
	_, err := v.editFile(updateAccount(c))
	return err
}

// checkAccessConfig is Java's checks of an account to update, before the file is read.
func checkAccessConfig(c AccessConfig) error {
	if len(c.AccessKey) <= aclKeyMinLength || len(c.SecretKey) <= aclKeyMinLength {
		return &EditRefused{fmt.Sprintf("The accessKey=%s and secretKey=%s cannot be null and length should longer than 6",
			javaString(c.AccessKey), javaString(c.SecretKey))}
	}
	for _, list := range [][]string{c.TopicPerms, c.GroupPerms} {
		if err := checkResourcePerms(list); err != nil {
			return err
		}
	}
	white := ""
	if c.WhiteRemoteAddress != nil {
		white = *c.WhiteRemoteAddress
	}
	fields := []struct{ name, value string }{{"accessKey", c.AccessKey}, {"secretKey", c.SecretKey},
		{"whiteRemoteAddress", white}, {"defaultTopicPerm", c.DefaultTopicPerm}, {"defaultGroupPerm", c.DefaultGroupPerm},
		{"topicPerms", strings.Join(c.TopicPerms, ",")}, {"groupPerms", strings.Join(c.GroupPerms, ",")}}
	for _, f := range fields {
		if !utf8.ValidString(f.value) {
			return &EditRefused{f.name + " is not valid UTF-8"}
		}
	}
	return nil
}

// updateAccount is UpdateAccessConfig's change of the file (c checked already).
func updateAccount(c AccessConfig) func(root *yaml.Node) (bool, error) {
	return func(root *yaml.Node) (bool, error) {
		accounts := mappingValue(root, keyAccounts, yaml.SequenceNode)
		accounts.Style &^= yaml.FlowStyle // "accounts: []" grows into a block list
		var acct *yaml.Node
		for i, a := range accounts.Content {
			if a.Kind == yaml.MappingNode && scalarOf(a, keyAccessKey) == c.AccessKey {
				acct = a
				accounts.Content = append(accounts.Content[:i], accounts.Content[i+1:]...)
				break
			}
		}
		if acct == nil {
			acct = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		setKey(acct, keyAccessKey, strNode(c.AccessKey))
		setKey(acct, keySecretKey, strNode(c.SecretKey))
		if c.WhiteRemoteAddress != nil {
			setKey(acct, keyWhiteRemoteAddress, strNode(*c.WhiteRemoteAddress))
		}
		setKey(acct, keyAdmin, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(c.Admin)})
		if c.DefaultTopicPerm != "" {
			setKey(acct, keyDefaultTopicPerm, strNode(c.DefaultTopicPerm))
		}
		if c.DefaultGroupPerm != "" {
			setKey(acct, keyDefaultGroupPerm, strNode(c.DefaultGroupPerm))
		}
		if c.TopicPerms != nil {
			setKey(acct, keyTopicPerms, strList(c.TopicPerms))
		}
		if c.GroupPerms != nil {
			setKey(acct, keyGroupPerms, strList(c.GroupPerms))
		}
		accounts.Content = append(accounts.Content, acct)
		return true, nil
	}
}

// DeleteAccessConfig removes an account; false (nothing written) when the file has none
// with that accessKey.
func (v *Validator) DeleteAccessConfig(accessKey string) (bool, error) {
	if accessKey == "" {
		return false, nil
	}
	return v.editFile(func(root *yaml.Node) (bool, error) {
		accounts := mappingValue(root, keyAccounts, 0)
		if accounts == nil || accounts.Kind != yaml.SequenceNode {
			return false, nil
		}
		for i, a := range accounts.Content {
			if a.Kind == yaml.MappingNode && scalarOf(a, keyAccessKey) == accessKey {
				accounts.Content = append(accounts.Content[:i], accounts.Content[i+1:]...)
				return true, nil
			}
		}
		return false, nil
	})
}

// UpdateGlobalWhiteAddrs replaces globalWhiteRemoteAddresses with addrs in file, which must be
// this broker's ACL file ("" names it); false (nothing written) for another file, as Java
// refuses a file it does not watch.
func (v *Validator) UpdateGlobalWhiteAddrs(addrs []string, file string) (bool, error) {
	if file != "" && !samePath(file, v.path) {
		v.logger.Warn("acl: globalWhiteRemoteAddresses of a file that is not aclFile: refused",
			"aclFileFullPath", file, "aclFile", v.path)
		return false, nil
	}
	for _, a := range addrs {
		if !utf8.ValidString(a) {
			return false, &EditRefused{"globalWhiteAddrs is not valid UTF-8"}
		}
	}
	return v.editFile(func(root *yaml.Node) (bool, error) {
		setKey(root, keyGlobalWhite, strList(addrs))
		return true, nil
	})
}

// Versions are what GET_BROKER_CLUSTER_ACL_INFO reports: the ACL file's version, and every
// ACL file's version by full path (none for an empty file, as Java lists only files with data).
func (v *Validator) Versions() (DataVersion, map[string]DataVersion) {
	cfg := v.current.Load()
	all := map[string]DataVersion{}
	if !cfg.empty {
		all[absPath(v.path)] = cfg.version
	}
	return cfg.version, all
}

// EncodeVersions is Versions as GET_BROKER_CLUSTER_ACL_INFO's header carries them: JSON as
// fastjson writes a DataVersion and a map of them.
func EncodeVersions(version DataVersion, all map[string]DataVersion) (string, string) {
	return jsonText(version), jsonText(all)
}

func jsonText(x any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x) // a DataVersion or a map of them: cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

// editFile reads the ACL file, rewrites it with mutate (rewrite), and when mutate changed
// something writes the result and puts it in use. It returns mutate's verdict.
func (v *Validator) editFile(mutate func(root *yaml.Node) (bool, error)) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	mode := fs.FileMode(0o600) // a new file holds secret keys
	data, err := os.ReadFile(v.path)
	switch {
	case errors.Is(err, fs.ErrNotExist): // created, as Java creates the default file
	case err != nil:
		return false, fmt.Errorf("%w: aclFile %s: %w", ErrFile, v.path, err)
	default:
		if st, err := os.Stat(v.path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	out, cfg, changed, err := rewrite(data, mutate, v.clock().UnixMilli())
	if !changed || err != nil {
		if err != nil && !errors.As(err, new(*EditRefused)) {
			err = fmt.Errorf("%w: aclFile %s: %w", ErrFile, v.path, err)
		}
		return changed, err
	}
	if err := fsutil.WriteFileAtomicMode(v.path, out, mode, nil); err != nil {
		return false, fmt.Errorf("%w: write %s: %w", ErrFile, v.path, err)
	}
	cfg.stampVersion(v.clock())
	v.current.Store(cfg)
	v.loadedSum = sha256.Sum256(out)
	v.lastErr = ""
	if st, err := os.Stat(v.path); err == nil {
		v.seen = aclFileStamp{modTime: st.ModTime(), size: st.Size()}
	}
	v.logger.Info("acl: file edited", "file", v.path, "accounts", len(cfg.accounts),
		"globalWhiteRemoteAddresses", len(cfg.globalWhite), "dataVersion", cfg.version.Counter)
	return true, nil
}

// rewrite applies mutate to the root mapping of an ACL file's content and, when mutate
// changed something, advances the content's dataVersion (its counter + 1, 1 without one;
// the timestamp nowMs), and returns the new content with its parsed configuration. Content
// that is not YAML, a document that is not a mapping, and a result the broker would not load
// are *EditRefused. No I/O: the fuzz target drives it.
func rewrite(data []byte, mutate func(root *yaml.Node) (bool, error), nowMs int64) ([]byte, *aclConfig, bool, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, false, &EditRefused{fmt.Sprintf("the ACL file is not YAML: %v", err)}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		*root = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, false, &EditRefused{"the ACL file's document is not a mapping"}
	}
	var prev struct {
		DataVersion []DataVersion `yaml:"dataVersion"`
	}
	next := DataVersion{Counter: 1, Timestamp: nowMs}
	if root.Decode(&prev) == nil && len(prev.DataVersion) > 0 {
		next.Counter = prev.DataVersion[0].Counter + 1
	}
	changed, err := mutate(root)
	if !changed || err != nil {
		return nil, nil, changed, err
	}
	setKey(root, keyDataVersion, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{{
		Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			strNode("counter"), intNode(next.Counter), strNode("timestamp"), intNode(next.Timestamp),
		}}}})
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	enc.CompactSeqIndent() // "- " under its key, as snakeyaml writes lists
	// Invalid UTF-8 is refused before; nothing else fails here.
	if err := enc.Encode(&doc); err != nil {
		return nil, nil, false, &EditRefused{fmt.Sprintf("the ACL file cannot be written: %v", err)}
	}
	if err := enc.Close(); err != nil {
		return nil, nil, false, &EditRefused{fmt.Sprintf("the ACL file cannot be written: %v", err)}
	}
	cfg, err := parseACL(out.Bytes())
	if err != nil {
		return nil, nil, false, &EditRefused{strings.TrimPrefix(err.Error(), ErrFile.Error()+": ")}
	}
	return out.Bytes(), cfg, true, nil
}

// checkResourcePerms is Java's Permission.checkResourcePerms: each entry is name=PERM, PERM
// one of DENY, PUB, SUB, PUB|SUB, SUB|PUB.
func checkResourcePerms(entries []string) error {
	for _, e := range entries {
		items := strings.FieldsFunc(e, func(r rune) bool { return r == '=' }) // commons-lang split
		if len(items) != 2 {
			return &EditRefused{fmt.Sprintf("Parse Resource format error for %s.\n"+
				"The expected resource format is 'Res=Perm'. For example: topicA=SUB", e)}
		}
		switch strings.TrimSpace(items[1]) {
		case "DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB":
		default:
			return &EditRefused{fmt.Sprintf("Parse resource permission error for %s.\n"+
				"The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.", e)}
		}
	}
	return nil
}

// SplitList splits a header's comma-separated list as Java's String.split(",") does: empty
// items kept, trailing empty ones dropped, and "" is one empty item.
func SplitList(s string) []string {
	items := strings.Split(s, ",")
	if len(items) == 1 {
		return items
	}
	for len(items) > 0 && items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	return items
}

// javaString renders s as Java's String.format renders a String that may be null.
func javaString(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// mappingValue returns the value of key in mapping m. With kind != 0 a missing or null
// value is replaced by an empty node of that kind.
func mappingValue(m *yaml.Node, key string, kind yaml.Kind) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			val := m.Content[i+1]
			if kind != 0 && (val.Kind != kind || val.Tag == "!!null") {
				*val = yaml.Node{Kind: kind}
			}
			return val
		}
	}
	if kind == 0 {
		return nil
	}
	val := &yaml.Node{Kind: kind}
	m.Content = append(m.Content, strNode(key), val)
	return val
}

// setKey sets key in mapping m to val: in place when m has it (a scalar keeps its comments),
// else appended.
func setKey(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			old := m.Content[i+1]
			if old.Kind == yaml.ScalarNode && val.Kind == yaml.ScalarNode {
				old.Tag, old.Value, old.Style = val.Tag, val.Value, 0
				return
			}
			m.Content[i+1] = val
			return
		}
	}
	m.Content = append(m.Content, strNode(key), val)
}

// scalarOf is the scalar value of key in mapping m ("" when absent or not a scalar).
func scalarOf(m *yaml.Node, key string) string {
	if v := mappingValue(m, key, 0); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// strNode is a string scalar: the encoder quotes it when it would read as another type.
func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func intNode(n int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(n)}
}

func strList(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, s := range items {
		n.Content = append(n.Content, strNode(s))
	}
	return n
}

// absPath is path made absolute and clean (Java's full path of an ACL file).
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}

// samePath says whether a and b name the same file: the same full path, or the same file
// through links.
func samePath(a, b string) bool {
	if absPath(a) == absPath(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
