package codec

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Caps on header fields (MaxRemarkBytes, MaxExtFieldKeyBytes, MaxExtFieldValueBytes,
// MaxExtFields): at the cap a header decodes; one over fails with ErrHeaderLimit naming the
// field, after the fixed fields were decoded, and without copying the oversized field.

// jsonExtHeader is a JSON header whose code, opaque and flag come after extFields (so a
// decoder that stopped at the first field over its cap could not answer the request).
func jsonExtHeader(remark string, ext [][2]string) string {
	var b strings.Builder
	b.WriteString(`{"remark":"` + remark + `","extFields":{`)
	for i, kv := range ext {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(kv[0]) + ":" + strconv.Quote(kv[1]))
	}
	b.WriteString(`},"code":310,"language":"GO","version":317,"opaque":77,"flag":2}`)
	return b.String()
}

// rocketMQExtHeader is the ROCKETMQ form of the same header.
func rocketMQExtHeader(remark string, ext [][2]string) []byte {
	h := binary.BigEndian.AppendUint16(nil, 310)
	h = append(h, byte(LanguageGo))
	h = binary.BigEndian.AppendUint16(h, 317)
	h = binary.BigEndian.AppendUint32(h, 77)
	h = binary.BigEndian.AppendUint32(h, 2)
	h = binary.BigEndian.AppendUint32(h, uint32(len(remark)))
	h = append(h, remark...)
	var area []byte
	for _, kv := range ext {
		area = binary.BigEndian.AppendUint16(area, uint16(len(kv[0])))
		area = append(area, kv[0]...)
		area = binary.BigEndian.AppendUint32(area, uint32(len(kv[1])))
		area = append(area, kv[1]...)
	}
	h = binary.BigEndian.AppendUint32(h, uint32(len(area)))
	return append(h, area...)
}

func manyFields(n int) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = [2]string{"k" + strconv.Itoa(i), "v"}
	}
	return out
}

// decodeBothForms decodes the header in JSON and ROCKETMQ form.
func decodeBothForms(t *testing.T, remark string, ext [][2]string, check func(t *testing.T, c *RemotingCommand, err error)) {
	t.Helper()
	t.Run("json", func(t *testing.T) {
		var c RemotingCommand
		check(t, &c, DecodeCommandInto(&c, jsonPayload(jsonExtHeader(remark, ext), []byte("body"))))
	})
	t.Run("rocketmq", func(t *testing.T) {
		var c RemotingCommand
		check(t, &c, DecodeCommandInto(&c, rocketMQPayload(rocketMQExtHeader(remark, ext), []byte("body"))))
	})
}

func TestHeaderLimitsAtCapDecode(t *testing.T) {
	ext := manyFields(MaxExtFields - 2)
	ext = append(ext, [2]string{strings.Repeat("K", MaxExtFieldKeyBytes), "v"},
		[2]string{"topic", strings.Repeat("v", MaxExtFieldValueBytes)})
	decodeBothForms(t, strings.Repeat("r", MaxRemarkBytes), ext, func(t *testing.T, c *RemotingCommand, err error) {
		require.NoError(t, err)
		require.Len(t, c.Remark, MaxRemarkBytes)
		require.Len(t, c.ExtFields, MaxExtFields)
		require.Len(t, c.ExtFields["topic"], MaxExtFieldValueBytes)
		require.Equal(t, int32(77), c.Opaque)
		require.Equal(t, "body", string(c.Body))
	})
}

func TestHeaderLimitsOverCap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remark string
		ext    [][2]string
		field  string
	}{
		{"remark", strings.Repeat("r", MaxRemarkBytes+1), nil, `"remark"`},
		{"key", "", [][2]string{{strings.Repeat("K", MaxExtFieldKeyBytes+1), "v"}}, `"extFields key"`},
		{"value", "", [][2]string{{"a", "1"}, {"topic", strings.Repeat("v", MaxExtFieldValueBytes+1)}}, `"extFields.topic"`},
		{"entries", "", manyFields(MaxExtFields + 1), `"extFields"`},
		{"3MiB value", "", [][2]string{{"topic", strings.Repeat("T", 3<<20)}}, `"extFields.topic"`},
		{"100000 entries", "", manyFields(100_000), `"extFields"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decodeBothForms(t, tc.remark, tc.ext, func(t *testing.T, c *RemotingCommand, err error) {
				require.ErrorIs(t, err, ErrHeaderLimit)
				require.Contains(t, err.Error(), tc.field)
				require.True(t, strings.HasPrefix(err.Error(), "codec: "), err.Error())
				// Enough to answer the request: what the header says after the big field.
				require.Equal(t, int32(310), c.Code)
				require.Equal(t, int32(77), c.Opaque)
				require.Equal(t, int32(2), c.Flag)
				require.Equal(t, int32(317), c.Version)
				require.Equal(t, LanguageGo, c.Language)
				require.Empty(t, c.Remark)
				require.Empty(t, c.ExtFields)
				require.Nil(t, c.Body)
			})
		})
	}
}

// TestHeaderLimitsMalformedWins: a header over a cap that is also malformed further on is
// malformed (the connection closes), not merely over its cap.
func TestHeaderLimitsMalformedWins(t *testing.T) {
	big := strings.Repeat("r", MaxRemarkBytes+1)
	_, err := DecodeCommand(jsonPayload(`{"remark":"`+big+`","code":1,}`, nil))
	require.ErrorIs(t, err, ErrHeaderJSON)
	require.NotErrorIs(t, err, ErrHeaderLimit)

	h := rocketMQExtHeader(big, [][2]string{{"a", "b"}})
	h = h[:len(h)-1] // torn value
	_, err = DecodeCommand(rocketMQPayload(h, nil))
	require.ErrorIs(t, err, ErrHeaderRocketMQ)
	require.NotErrorIs(t, err, ErrHeaderLimit)
}

// TestHeaderLimitsAllocateNothingBig: a header over a cap costs an error value, not a copy
// of the header. Entries up to the cap are collected before the one over it is seen: the
// JSON decoder's list of their places (MaxExtFields of them at most) is all that grows.
func TestHeaderLimitsAllocateNothingBig(t *testing.T) {
	const small, spanList = 4 << 10, 256 << 10
	for _, tc := range []struct {
		name     string
		payload  []byte
		maxBytes uint64
	}{
		{"json 3 MiB value", jsonPayload(jsonExtHeader("", [][2]string{{"a", "1"}, {"topic", strings.Repeat("T", 3<<20)}}), nil), small},
		{"json 4 MiB remark", jsonPayload(jsonExtHeader(strings.Repeat("r", 4<<20), [][2]string{{"a", "1"}}), nil), small},
		{"json 100000 entries", jsonPayload(jsonExtHeader("", manyFields(100_000)), nil), spanList},
		{"rocketmq 3 MiB value", rocketMQPayload(rocketMQExtHeader("", [][2]string{{"a", "1"}, {"topic", strings.Repeat("T", 3<<20)}}), nil), small},
		{"rocketmq 4 MiB remark", rocketMQPayload(rocketMQExtHeader(strings.Repeat("r", 4<<20), nil), nil), small},
		{"rocketmq 100000 entries", rocketMQPayload(rocketMQExtHeader("", manyFields(100_000)), nil), small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c RemotingCommand
			const runs = 5
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				require.ErrorIs(t, DecodeCommandInto(&c, tc.payload), ErrHeaderLimit)
			}
			runtime.ReadMemStats(&after)
			perRun := (after.TotalAlloc - before.TotalAlloc) / runs
			require.Less(t, perRun, tc.maxBytes, "bytes allocated per decode of a %d-byte header", len(tc.payload))
		})
	}
}
