package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMQVersionName(t *testing.T) {
	for ordinal, want := range map[int32]string{
		212: "V4_0_0_SNAPSHOT", 213: "V4_0_0", 317: "V4_5_2", 401: "V4_9_4", 413: "V5_0_0",
		409: "V4_9_8", 479: "V5_3_3", 611: "V5_9_9", 612: "HIGHER_VERSION", 100: "V3(100)", -1: "Version(-1)",
	} {
		require.Equal(t, want, MQVersionName(ordinal), "ordinal %d", ordinal)
	}
}

func TestParseMQVersion(t *testing.T) {
	for _, ordinal := range []int32{212, 213, 317, 401, 409, 412, 413, 479, 611} {
		got, err := ParseMQVersion(MQVersionName(ordinal))
		require.NoError(t, err, ordinal)
		require.Equal(t, MQVersion(ordinal), got)
	}
	var v MQVersion
	require.NoError(t, v.UnmarshalText([]byte("V4_9_8")))
	require.Equal(t, MQVersion(409), v)
	text, err := v.MarshalText()
	require.NoError(t, err)
	require.Equal(t, "V4_9_8", string(text))
	for _, bad := range []string{"", "4_9_8", "V4_9", "V4_9_8_9", "V3_0_0", "V6_0_0", "V4_10_0", "V4_9_x", "HIGHER_VERSION",
		"V4_9_8_snapshot", "409"} {
		_, err := ParseMQVersion(bad)
		require.ErrorIs(t, err, ErrMQVersion, bad)
	}
}
