package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// wantResponseFrame is what AppendFrameHeader writes for the response built the general way:
// NewResponse, an ExtFields map, a body of bodyLen bytes.
func wantResponseFrame(t testing.TB, opaque int32, st SerializeType, code ResponseCode, remark string,
	fields []Field, bodyLen int) ([]byte, error) {
	t.Helper()
	req := RemotingCommand{Opaque: opaque, SerializeType: st}
	want := NewResponse(&req, code, remark)
	if len(fields) > 0 {
		want.ExtFields = map[string]string{}
		for _, f := range fields {
			want.ExtFields[f.Key] = string(f.appendValue(nil))
		}
	}
	want.Body = make([]byte, bodyLen)
	return want.AppendFrameHeader(nil)
}

func TestAppendResponseFrameHeaderMatchesAppendFrameHeader(t *testing.T) {
	cases := []struct {
		name   string
		opaque int32
		st     SerializeType
		code   ResponseCode
		remark string
		fields []Field
		body   int
	}{
		{name: "bare", opaque: 7, code: ResponseSuccess},
		{name: "remark", opaque: -3, code: ResponseSystemError, remark: "the custom field <topic> is null"},
		{name: "send", opaque: 1 << 30, code: ResponseSuccess, fields: []Field{
			StrField("MSG_REGION", "DefaultRegion"), StrField("TRACE_ON", "true"),
			BytesField("msgId", []byte("7F00000100002A9F0000000000000000")), NumField("queueId", 3),
			NumField("queueOffset", 1<<40), BytesField("transactionId", []byte("C0000202494900000000745bd780001"))}},
		{name: "pull with body", opaque: 9, code: ResponsePullNotFound, remark: "OFFSET_OVERFLOW_ONE",
			fields: []Field{NumField("maxOffset", 5), NumField("minOffset", 0), NumField("nextBeginOffset", 5),
				NumField("suggestWhichBrokerId", 0)}, body: 12345},
		{name: "escaped remark", opaque: 1, code: ResponseTopicNotExist, remark: "topic[\"x\\y\"]\n\u0001é"},
		{name: "escaped value", opaque: 1, code: ResponseSuccess,
			fields: []Field{BytesField("transactionId", []byte{'a', 1, 'b', 0xff})}},
		{name: "escaped key and text", opaque: 1, code: ResponseSuccess,
			fields: []Field{StrField("k\"ey", "v\u2028"), NumField("n", -12)}},
		{name: "unsorted", opaque: 1, code: ResponseSuccess,
			fields: []Field{NumField("queueId", 1), NumField("msgId", 2)}},
		{name: "rocketmq serialization", opaque: 11, st: SerializeRocketMQ,
			code: ResponseSuccess, remark: "x", fields: []Field{NumField("offset", 42), StrField("a", "b")}, body: 3},
		{name: "rocketmq bare", opaque: -1, st: SerializeRocketMQ, code: ResponseSystemBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fields := append([]Field(nil), tc.fields...)
			got, err := AppendResponseFrameHeader([]byte("prefix"), tc.opaque, tc.st, tc.code, tc.remark, fields, tc.body)
			require.NoError(t, err)
			require.Equal(t, "prefix", string(got[:6]))
			got = got[6:]
			want, err := wantResponseFrame(t, tc.opaque, tc.st, tc.code, tc.remark, tc.fields, tc.body)
			require.NoError(t, err)
			require.Equal(t, want, got)

			// And it decodes back to the same response.
			dec, err := DecodeCommand(append(got[4:], make([]byte, tc.body)...))
			require.NoError(t, err)
			require.Equal(t, int32(tc.code), dec.Code)
			require.Equal(t, tc.opaque, dec.Opaque)
			require.True(t, dec.IsResponse())
			require.Equal(t, tc.remark, dec.Remark)
			require.Len(t, dec.Body, tc.body)
			require.Len(t, dec.ExtFields, len(tc.fields))
		})
	}
}

func TestAppendResponseFrameHeaderErrors(t *testing.T) {
	dst := []byte("keep")
	got, err := AppendResponseFrameHeader(dst, 1, SerializeJSON, ResponseSuccess, "",
		[]Field{NumField("a", 1), StrField("a", "x")}, 0)
	require.ErrorIs(t, err, ErrDuplicateField)
	require.Equal(t, "keep", string(got))

	got, err = AppendResponseFrameHeader(dst, 1, SerializeType(7), ResponseSuccess, "", nil, 0)
	require.ErrorIs(t, err, ErrSerializeType)
	require.Equal(t, "keep", string(got))

	got, err = AppendResponseFrameHeader(dst, 1, SerializeJSON, ResponseSuccess, "", nil, 1<<31-1)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	require.Equal(t, "keep", string(got))

	got, err = AppendResponseFrameHeader(dst, 1, SerializeRocketMQ, ResponseCode(1<<20), "", nil, 0)
	require.ErrorIs(t, err, ErrHeaderRocketMQ)
	require.Equal(t, "keep", string(got))
}

func TestAppendResponseFrameHeaderDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 1024)
	msgID := []byte("7F00000100002A9F0000000000000000")
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		allocs := testing.AllocsPerRun(100, func() {
			fields := [...]Field{
				StrField("MSG_REGION", "DefaultRegion"), StrField("TRACE_ON", "true"),
				BytesField("msgId", msgID), NumField("queueId", 3), NumField("queueOffset", 99),
			}
			var err error
			buf, err = AppendResponseFrameHeader(buf[:0], 5, st, ResponseSuccess, "remark", fields[:], 0)
			if err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs, "serialize type %d", st)
	}
}

// FuzzResponseFrameHeader: for any response, the map-free encoder writes what the general
// encoder writes, or both refuse it.
func FuzzResponseFrameHeader(f *testing.F) {
	f.Add(int32(1), false, int32(0), "", "msgId", "7F00000100002A9F", int64(3), []byte("x"), 0)
	f.Add(int32(-9), true, int32(17), "topic[\"a\"]\n", "k", "\x01\xff", int64(-1), []byte{0, 0xfe}, 100)
	f.Add(int32(1<<30), false, int32(24), "é\u2028", "", "", int64(1<<62), []byte(nil), 1<<20)
	f.Fuzz(func(t *testing.T, opaque int32, rocketMQ bool, code int32, remark, key, str string, num int64,
		raw []byte, bodyLen int) {
		st := SerializeJSON
		if rocketMQ {
			st = SerializeRocketMQ
		}
		if bodyLen < 0 {
			bodyLen = -bodyLen % (1 << 24)
		}
		bodyLen %= 1 << 24 // AppendFrameHeader in wantResponseFrame allocates the body
		fields := []Field{StrField(key, str), NumField(key+"#n", num), BytesField(key+"#b", raw)}
		want, wantErr := wantResponseFrame(t, opaque, st, ResponseCode(code), remark, fields, bodyLen)
		got, err := AppendResponseFrameHeader(nil, opaque, st, ResponseCode(code), remark,
			append([]Field(nil), fields...), bodyLen)
		if wantErr != nil || err != nil {
			require.Error(t, err, "the general encoder refused: %v", wantErr)
			require.Error(t, wantErr, "the map-free encoder refused: %v", err)
			return
		}
		require.Equal(t, want, got)
	})
}
