package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func TestPutGetRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	for i := 0; i < 500; i++ {
		res := mustPut(t, s, testMessage("T", int32(i%3), append(bodyf("m%04d", i), body(200, "x")...), codec.PropertyTags, "A"))
		require.Equal(t, int64(i/3), res.QueueOffset)
	}
	waitDispatched(t, s)
	for q := int32(0); q < 3; q++ {
		recs := getAll(t, s, "T", q)
		require.Len(t, recs, 167-int(q+1)/3)
		for i, r := range recs {
			require.Equal(t, int64(i), r.QueueOffset)
			require.Equal(t, string(bodyf("m%04d", i*3+int(q))), string(r.Body[:5]))
		}
	}
	maxPhy := s.MaxPhyOffset()
	require.Greater(t, len(commitLogFiles(t, dir)), 1)
	require.NoError(t, s.Shutdown())

	s2 := reopen(t, cfg, Deps{})
	require.True(t, s2.LastExitOK())
	require.Equal(t, maxPhy, s2.MaxPhyOffset())
	for q := int32(0); q < 3; q++ {
		require.Equal(t, int64(167-int(q+1)/3), s2.GetMaxOffsetInQueue("T", q))
	}
	res := mustPut(t, s2, testMessage("T", 0, []byte("after")))
	require.Equal(t, int64(167), res.QueueOffset)
	require.Equal(t, maxPhy, res.WroteOffset)
}
