package acl

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzUpdateAccessConfig: an account's values come from the network (an admin's
// UPDATE_AND_CREATE_ACL_CONFIG header) and go into the YAML file. Whatever they hold — line
// breaks, quotes, "#", YAML syntax — and whatever the file held, an update never panics, and
// when it is accepted the new file holds that account exactly once, with exactly those
// values, and nothing else about it (no injected key, no admin flag it was not given).
func FuzzUpdateAccessConfig(f *testing.F) {
	f.Add([]byte(editFixture), "RocketMQ", "87654321", "192.168.1.*", "topicA=PUB,topicB=SUB", false)
	f.Add([]byte(""), "newAccount1", "s3cret\n  admin: true", "", "", false)
	f.Add([]byte("accounts: []\n"), "key: value#x", "'\"quoted\"'", "10.0.0.1,10.0.0.2", "t=DENY", true)
	f.Add([]byte("accounts:\n- accessKey: a1234567\n  secretKey: b1234567\n"), "a1234567", "- [x]", "*", "x: y=SUB", true)
	f.Add([]byte("[1, 2]"), "abcdefg", "hijklmn", "", "", false)
	f.Fuzz(func(t *testing.T, file []byte, accessKey, secretKey, white, topicPerms string, admin bool) {
		c := AccessConfig{AccessKey: accessKey, SecretKey: secretKey, Admin: admin, WhiteRemoteAddress: &white,
			TopicPerms: SplitList(topicPerms)}
		if checkAccessConfig(c) != nil {
			return
		}
		out, cfg, changed, err := rewrite(file, updateAccount(c), 1700000000000)
		if err != nil {
			var refused *EditRefused
			if !errors.As(err, &refused) {
				t.Fatalf("an error that is not a refusal: %v", err)
			}
			return
		}
		if !changed {
			t.Fatal("an update that changed nothing")
		}
		if !cfg.versioned || cfg.version.Timestamp != 1700000000000 {
			t.Fatalf("dataVersion %+v", cfg.version)
		}
		var written struct {
			Accounts []map[string]any `yaml:"accounts"`
		}
		if err := yaml.Unmarshal(out, &written); err != nil {
			t.Fatalf("the written file does not read back: %v\n%s", err, out)
		}
		var found []map[string]any
		for _, a := range written.Accounts {
			if a["accessKey"] == accessKey {
				found = append(found, a)
			}
		}
		if len(found) != 1 {
			t.Fatalf("account %q %d times in\n%s", accessKey, len(found), out)
		}
		a := found[0]
		if a["secretKey"] != secretKey || a["whiteRemoteAddress"] != white || a["admin"] != admin {
			t.Fatalf("account written as %v, want secretKey %q whiteRemoteAddress %q admin %v\n%s", a, secretKey, white, admin, out)
		}
		perms, _ := a["topicPerms"].([]any)
		if len(perms) != len(c.TopicPerms) {
			t.Fatalf("topicPerms %v, want %q", perms, c.TopicPerms)
		}
		for i, p := range perms {
			if p != c.TopicPerms[i] {
				t.Fatalf("topicPerms %v, want %q", perms, c.TopicPerms)
			}
		}
		if acct := cfg.accounts[accessKey]; acct == nil || acct.admin != admin {
			t.Fatalf("the loaded configuration has %+v for %q", acct, accessKey)
		}
	})
}
