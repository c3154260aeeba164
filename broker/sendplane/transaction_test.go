package sendplane

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
)

// legacyHalfProperties are properties as a broker that did not check them may have stored:
// empty pieces, a piece without a name, an empty value, a piece without a value, a 0x01 in a
// value.
const legacyHalfProperties = "\x02KEYS\x01k\x02\x01noname\x02EMPTY\x01\x02junk\x02\x02TAGS\x01t\x01u\x02DELAY\x013\x02UNIQ_KEY\x01U1"

var legacyBornHost = netip.MustParseAddrPort("10.0.0.9:5000")

func TestEndTransactionCommitOfALegacyHalfIsCanonical(t *testing.T) {
	p, st := startPlane(t)
	half := codec.Record{Topic: []byte(metadata.TransHalfTopic), Body: []byte("half"), BornHost: legacyBornHost,
		StoreHost: testHost, Properties: []byte("\x02\x02REAL_TOPIC\x01TopicTx\x02REAL_QID\x011\x02PGROUP\x01PG\x02" +
			"TRAN_MSG\x01true\x02\x01x\x02KEYS\x01k\x01j")}
	code, remark := p.tx.commit(&half)
	require.Equal(t, codec.ResponseSuccess, code, remark)
	r := onlyRecord(t, st, "TopicTx", 1)
	require.Equal(t, "half", string(r.Body))
	require.NoError(t, codec.ValidateProperties(r.Properties))
	require.Equal(t, map[string]string{"PGROUP": "PG", "WAIT": "false"}, codec.DecodeProperties(r.Properties))
}

func TestTransactionDiscardOfALegacyHalfIsCanonical(t *testing.T) {
	p, st := startPlane(t)
	half := codec.Record{Topic: []byte(metadata.TransHalfTopic), Body: []byte("half"), BornHost: legacyBornHost,
		StoreHost: testHost, Properties: []byte(legacyHalfProperties)}
	require.True(t, p.tx.discard(&half, true), "moved, not left to be retried for ever")
	kept := onlyRecord(t, st, metadata.TransCheckMaxTimeTopic, 0)
	require.Equal(t, "half", string(kept.Body))
	require.NoError(t, codec.ValidateProperties(kept.Properties))
	require.Equal(t, map[string]string{"KEYS": "k", "DELAY": "3", "UNIQ_KEY": "U1"},
		codec.DecodeProperties(kept.Properties))
}
