package codec

// The ACL admin requests' headers (RocketMQ 4.9.8's CreateAccessConfigRequestHeader,
// DeleteAccessConfigRequestHeader, UpdateGlobalWhiteAddrsConfigRequestHeader and
// GetBrokerAclConfigResponseHeader), their keys as Java names its fields.

// CreateAccessConfigRequestHeader is the header of UPDATE_AND_CREATE_ACL_CONFIG (50): one
// account of the ACL file, created or updated. The lists are comma-separated
// ("topicA=DENY,topicB=PUB|SUB"); a key that is absent leaves the account's value as it is.
type CreateAccessConfigRequestHeader struct {
	AccessKey          string           // accessKey, required
	SecretKey          string           // secretKey
	WhiteRemoteAddress Optional[string] // whiteRemoteAddress
	Admin              bool             // admin
	DefaultTopicPerm   string           // defaultTopicPerm
	DefaultGroupPerm   string           // defaultGroupPerm
	TopicPerms         Optional[string] // topicPerms
	GroupPerms         Optional[string] // groupPerms
}

// Decode reads the keys.
func (h *CreateAccessConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "CreateAccessConfigRequestHeader"}
	*h = CreateAccessConfigRequestHeader{
		AccessKey:          r.str("accessKey", true),
		SecretKey:          r.str("secretKey", false),
		WhiteRemoteAddress: r.optStr("whiteRemoteAddress"),
		Admin:              r.boolean("admin", false, false),
		DefaultTopicPerm:   r.str("defaultTopicPerm", false),
		DefaultGroupPerm:   r.str("defaultGroupPerm", false),
		TopicPerms:         r.optStr("topicPerms"),
		GroupPerms:         r.optStr("groupPerms"),
	}
	return r.err
}

// Encode writes the keys (admin always, as Java's primitive boolean).
func (h *CreateAccessConfigRequestHeader) Encode(ext map[string]string) {
	ext["accessKey"] = h.AccessKey
	extPutString(ext, "secretKey", h.SecretKey)
	extPutOptString(ext, "whiteRemoteAddress", h.WhiteRemoteAddress)
	extPutBool(ext, "admin", h.Admin)
	extPutString(ext, "defaultTopicPerm", h.DefaultTopicPerm)
	extPutString(ext, "defaultGroupPerm", h.DefaultGroupPerm)
	extPutOptString(ext, "topicPerms", h.TopicPerms)
	extPutOptString(ext, "groupPerms", h.GroupPerms)
}

// DeleteAccessConfigRequestHeader is the header of DELETE_ACL_CONFIG (51).
type DeleteAccessConfigRequestHeader struct {
	AccessKey string // accessKey, required
}

// Decode reads the keys.
func (h *DeleteAccessConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "DeleteAccessConfigRequestHeader"}
	*h = DeleteAccessConfigRequestHeader{AccessKey: r.str("accessKey", true)}
	return r.err
}

// Encode writes the keys.
func (h *DeleteAccessConfigRequestHeader) Encode(ext map[string]string) {
	ext["accessKey"] = h.AccessKey
}

// UpdateGlobalWhiteAddrsConfigRequestHeader is the header of UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
// (53): the comma-separated address patterns that replace the file's
// globalWhiteRemoteAddresses. Both keys are required (Java's @CFNotNull); an empty
// aclFileFullPath names the broker's ACL file.
type UpdateGlobalWhiteAddrsConfigRequestHeader struct {
	GlobalWhiteAddrs string // globalWhiteAddrs, required
	AclFileFullPath  string // aclFileFullPath, required
}

// Decode reads the keys.
func (h *UpdateGlobalWhiteAddrsConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "UpdateGlobalWhiteAddrsConfigRequestHeader"}
	*h = UpdateGlobalWhiteAddrsConfigRequestHeader{
		GlobalWhiteAddrs: r.str("globalWhiteAddrs", true),
		AclFileFullPath:  r.str("aclFileFullPath", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *UpdateGlobalWhiteAddrsConfigRequestHeader) Encode(ext map[string]string) {
	ext["globalWhiteAddrs"] = h.GlobalWhiteAddrs
	ext["aclFileFullPath"] = h.AclFileFullPath
}

// GetBrokerAclConfigResponseHeader is the header of GET_BROKER_CLUSTER_ACL_INFO's (52) answer.
// Version is the ACL file's DataVersion as JSON ({"counter":1,"timestamp":1700000000000});
// AllAclFileVersion maps each ACL file's full path to its DataVersion, as JSON.
type GetBrokerAclConfigResponseHeader struct {
	Version           string // version, required
	AllAclFileVersion string // allAclFileVersion
	BrokerName        string // brokerName, required
	BrokerAddr        string // brokerAddr, required
	ClusterName       string // clusterName, required
}

// Decode reads the keys.
func (h *GetBrokerAclConfigResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetBrokerAclConfigResponseHeader"}
	*h = GetBrokerAclConfigResponseHeader{
		Version:           r.str("version", true),
		AllAclFileVersion: r.str("allAclFileVersion", false),
		BrokerName:        r.str("brokerName", true),
		BrokerAddr:        r.str("brokerAddr", true),
		ClusterName:       r.str("clusterName", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetBrokerAclConfigResponseHeader) Encode(ext map[string]string) {
	ext["version"] = h.Version
	extPutString(ext, "allAclFileVersion", h.AllAclFileVersion)
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
}
