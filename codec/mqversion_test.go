package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMQVersionName(t *testing.T) {
	for ordinal, want := range map[int32]string{
		212: "V4_0_0_SNAPSHOT", 213: "V4_0_0", 317: "V4_5_2", 401: "V4_9_4", 413: "V5_0_0",
		ServerVersion: "V5_3_3", 611: "V5_9_9", 612: "HIGHER_VERSION", 100: "V3(100)", -1: "Version(-1)",
	} {
		require.Equal(t, want, MQVersionName(ordinal), "ordinal %d", ordinal)
	}
}
