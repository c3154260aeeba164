package adminclient

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"maps"
	"slices"

	"github.com/ringmq/ringmq/codec"
)

// Credentials sign requests for a broker with RocketMQ's plain ACL (aclEnable=true), as the
// clients' AclClientRPCHook does: AccessKey (and SecurityToken when set) are added to the
// header, and Signature is Base64(HmacSHA1(SecretKey, the values of every header field but
// Signature in key order, then the body)).
type Credentials struct {
	AccessKey     string
	SecretKey     string
	SecurityToken string
}

// Fields of a signed request (Java SessionCredentials).
const (
	accessKeyField     = "AccessKey"
	signatureField     = "Signature"
	securityTokenField = "SecurityToken"
)

// Sign adds the credentials and the signature to req. A zero Credentials signs nothing.
func (c Credentials) Sign(req *codec.RemotingCommand) {
	if c.AccessKey == "" {
		return
	}
	req.SetExt(accessKeyField, c.AccessKey)
	if c.SecurityToken != "" {
		req.SetExt(securityTokenField, c.SecurityToken)
	}
	delete(req.ExtFields, signatureField)
	mac := hmac.New(sha1.New, []byte(c.SecretKey))
	for _, k := range slices.Sorted(maps.Keys(req.ExtFields)) {
		mac.Write([]byte(req.ExtFields[k]))
	}
	mac.Write(req.Body)
	req.SetExt(signatureField, base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}
