package acl

import (
	"errors"
	"log/slog"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// PlaneDeps is what the ACL admin requests need.
type PlaneDeps struct {
	// Validator is the ACL in use; nil when aclEnable=false.
	Validator *Validator
	// BrokerName, ClusterName and BrokerAddr (ip:port, as registered) are
	// GET_BROKER_CLUSTER_ACL_INFO's.
	BrokerName, ClusterName, BrokerAddr string
	Logger                              *slog.Logger // nil: discard
}

// Plane serves the ACL admin requests RocketMQ 4.9.8's broker serves:
// UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52)
// and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), editing aclFile as edit.go describes. Their
// routes run them on the admin pool (they write the file) and, with the ACL on, only for admin
// accounts (RocketMQ 4.9.8 lets any signed account edit the ACL; 5.3 made 50–52 admin-only;
// ringmq makes all four admin-only, as rewriting the global white list lets any address in).
//
// Answers are Java's: SUCCESS without a remark, or UPDATE_AND_CREATE_ACL_CONFIG_FAILED (209),
// DELETE_ACL_CONFIG_FAILED (210), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED (211) with the
// reason; a header without a required key is SYSTEM_ERROR naming it. With aclEnable=false
// Java's broker has no validator: 50, 51 and 53 fail with their code and no remark (the
// NullPointerException it catches has no message), and 52 is not answered at all (its
// handler logs the exception and returns nothing); ringmq answers the same, so a tool sees
// what it sees against Java.
//
// Safe for concurrent use; the edits are serialized by the Validator.
type Plane struct {
	d PlaneDeps
}

// NewPlane builds the plane.
func NewPlane(d PlaneDeps) *Plane {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Plane{d: d}
}

// ProcessUpdateAndCreateAccessConfig is UPDATE_AND_CREATE_ACL_CONFIG (50).
func (p *Plane) ProcessUpdateAndCreateAccessConfig(rc *remoting.Request) {
	var h codec.CreateAccessConfigRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if p.d.Validator == nil {
		rc.Reply.Answer(codec.ResponseUpdateAndCreateACLConfigFailed, "")
		return
	}
	c := AccessConfig{AccessKey: h.AccessKey, SecretKey: h.SecretKey, Admin: h.Admin,
		DefaultTopicPerm: h.DefaultTopicPerm, DefaultGroupPerm: h.DefaultGroupPerm}
	if h.WhiteRemoteAddress.Set {
		c.WhiteRemoteAddress = &h.WhiteRemoteAddress.Value
	}
	if h.TopicPerms.Set {
		c.TopicPerms = SplitList(h.TopicPerms.Value)
	}
	if h.GroupPerms.Set {
		c.GroupPerms = SplitList(h.GroupPerms.Value)
	}
	if err := p.d.Validator.UpdateAccessConfig(c); err != nil {
		p.failed(rc, codec.ResponseUpdateAndCreateACLConfigFailed, "update of accessKey "+h.AccessKey, err)
		return
	}
	rc.Reply.OK()
}

// ProcessDeleteAccessConfig is DELETE_ACL_CONFIG (51).
func (p *Plane) ProcessDeleteAccessConfig(rc *remoting.Request) {
	var h codec.DeleteAccessConfigRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if p.d.Validator == nil {
		rc.Reply.Answer(codec.ResponseDeleteACLConfigFailed, "")
		return
	}
	deleted, err := p.d.Validator.DeleteAccessConfig(h.AccessKey)
	switch {
	case err != nil:
		p.failed(rc, codec.ResponseDeleteACLConfigFailed, "delete of accessKey "+h.AccessKey, err)
	case !deleted:
		rc.Reply.Answer(codec.ResponseDeleteACLConfigFailed,
			"The accesskey["+h.AccessKey+"] corresponding to accessConfig has been deleted failed.")
	default:
		rc.Reply.OK()
	}
}

// ProcessUpdateGlobalWhiteAddrsConfig is UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).
func (p *Plane) ProcessUpdateGlobalWhiteAddrsConfig(rc *remoting.Request) {
	var h codec.UpdateGlobalWhiteAddrsConfigRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if p.d.Validator == nil {
		rc.Reply.Answer(codec.ResponseUpdateGlobalWhiteAddrsConfigFailed, "")
		return
	}
	updated, err := p.d.Validator.UpdateGlobalWhiteAddrs(SplitList(h.GlobalWhiteAddrs), h.AclFileFullPath)
	switch {
	case err != nil:
		p.failed(rc, codec.ResponseUpdateGlobalWhiteAddrsConfigFailed, "update of globalWhiteRemoteAddresses", err)
	case !updated:
		rc.Reply.Answer(codec.ResponseUpdateGlobalWhiteAddrsConfigFailed,
			"The globalWhiteAddresses["+h.GlobalWhiteAddrs+"] has been updated failed.")
	default:
		rc.Reply.OK()
	}
}

// ProcessGetBrokerClusterAclInfo is GET_BROKER_CLUSTER_ACL_INFO (52): the ACL file's version
// and this broker's names, in the response header.
func (p *Plane) ProcessGetBrokerClusterAclInfo(rc *remoting.Request) {
	if p.d.Validator == nil {
		p.d.Logger.Debug("acl: GET_BROKER_CLUSTER_ACL_INFO with aclEnable=false: not answered, as RocketMQ's broker does not answer it")
		return
	}
	version, all := EncodeVersions(p.d.Validator.Versions())
	h := codec.GetBrokerAclConfigResponseHeader{Version: version, AllAclFileVersion: all,
		BrokerName: p.d.BrokerName, BrokerAddr: p.d.BrokerAddr, ClusterName: p.d.ClusterName}
	rc.Reply.Answer(codec.ResponseSuccess, "",
		codec.Field{Key: "version", Str: h.Version},
		codec.Field{Key: "allAclFileVersion", Str: h.AllAclFileVersion},
		codec.Field{Key: "brokerName", Str: h.BrokerName},
		codec.Field{Key: "brokerAddr", Str: h.BrokerAddr},
		codec.Field{Key: "clusterName", Str: h.ClusterName})
}

// failed answers an edit that did not happen: the refusal's text, or the file's error
// (logged, as the operator must look at the file).
func (p *Plane) failed(rc *remoting.Request, code codec.ResponseCode, what string, err error) {
	var refused *EditRefused
	if !errors.As(err, &refused) {
		p.d.Logger.Error("acl: "+what+" failed", "err", err)
	}
	rc.Reply.Answer(code, err.Error())
}
