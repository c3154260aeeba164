package readplane

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func TestRecordMatchesQuery(t *testing.T) {
	var props []byte
	props = codec.AppendProperty(props, "KEYS", "a bb")
	props = codec.AppendProperty(props, "UNIQ_KEY", "U1")
	m := codec.Message{Topic: "T", Body: []byte("b"), Properties: props, BornHost: testHost, StoreHost: testHost}
	rec, err := m.AppendRecord(nil)
	require.NoError(t, err)
	require.True(t, recordMatchesQuery(rec, "T", "bb", false))
	require.True(t, recordMatchesQuery(rec, "T", "a", false))
	require.False(t, recordMatchesQuery(rec, "T", "b", false))
	require.False(t, recordMatchesQuery(rec, "T", "U1", false))
	require.True(t, recordMatchesQuery(rec, "T", "U1", true))
	require.False(t, recordMatchesQuery(rec, "T", "a", true))
	require.False(t, recordMatchesQuery(rec, "Other", "a", false))
	require.False(t, recordMatchesQuery(rec[:20], "T", "a", false))
}
