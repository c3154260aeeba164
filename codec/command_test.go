package codec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewRequest(t *testing.T) {
	ext := map[string]string{"topic": "T"}
	body := []byte("x")
	c := NewRequest(RequestNotifyConsumerIdsChanged, ext, body)
	require.Equal(t, &RemotingCommand{Code: 40, Language: LanguageJava, Version: 409, ExtFields: ext,
		Body: body, SerializeType: SerializeJSON}, c)
	require.False(t, c.IsResponse())
	require.GreaterOrEqual(t, ServerVersion(), int32(401), "§1.5: clients need >= 401")
}

// TestSetServerVersion: every command ringmq builds or encodes carries the version set.
func TestSetServerVersion(t *testing.T) {
	require.Equal(t, int32(409), ServerVersion(), "default: V4_9_8")
	SetServerVersion(479)
	t.Cleanup(func() { SetServerVersion(DefaultServerVersion) })
	require.Equal(t, int32(479), NewRequest(RequestHeartBeat, nil, nil).Version)
	req := &RemotingCommand{Opaque: 1, SerializeType: SerializeJSON}
	require.Equal(t, int32(479), NewResponse(req, ResponseSuccess, "").Version)
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame, err := AppendResponseFrameHeader(nil, 1, st, ResponseSuccess, "", nil, 0)
		require.NoError(t, err)
		got, err := DecodeCommand(frame[4:])
		require.NoError(t, err, st)
		require.Equal(t, int32(479), got.Version, st)
	}
}

func TestNewResponse(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := &RemotingCommand{Code: 10, Language: LanguageGo, Version: 317, Opaque: 99, Flag: FlagOneway,
			ExtFields: map[string]string{"topic": "T"}, Body: []byte("b"), SerializeType: st}
		resp := NewResponse(req, ResponseTopicNotExist, "no topic")
		require.Equal(t, &RemotingCommand{Code: 17, Language: LanguageJava, Version: 409, Opaque: 99,
			Flag: FlagResponse, Remark: "no topic", SerializeType: st}, resp)
		require.True(t, resp.IsResponse())
		require.False(t, resp.IsOneway())

		// InitResponse keeps (and empties) the map of a recycled command.
		m := map[string]string{"old": "x"}
		recycled := &RemotingCommand{Code: 5, Body: []byte("old"), ExtFields: m, Remark: "old"}
		recycled.InitResponse(req, ResponseSuccess, "")
		require.Empty(t, recycled.ExtFields)
		recycled.SetExt("k", "v")
		require.Equal(t, map[string]string{"k": "v"}, m, "same map reused")
		require.Nil(t, recycled.Body)
		require.Equal(t, int32(99), recycled.Opaque)
	}
}

func TestAppendFrameHeader(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		c := &RemotingCommand{Code: 11, Opaque: 3, Flag: FlagResponse, SerializeType: st,
			ExtFields: map[string]string{"nextBeginOffset": "10"}, Body: bytes.Repeat([]byte{9}, 777)}
		prefix := []byte("prefix")
		head, err := c.AppendFrameHeader(prefix)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(head[:6]))
		head = head[6:]
		whole, err := c.AppendFrame(nil)
		require.NoError(t, err)
		require.Equal(t, whole, append(append([]byte(nil), head...), c.Body...), "header + body = frame")
		require.Equal(t, uint32(len(whole)-4), binary.BigEndian.Uint32(head), "length word counts the body")
		require.Equal(t, byte(st), head[4])
	}
}

func TestAppendFrameBadSerializeType(t *testing.T) {
	c := &RemotingCommand{SerializeType: 7}
	out, err := c.AppendFrame([]byte("x"))
	require.ErrorIs(t, err, ErrSerializeType)
	require.Equal(t, "x", string(out))
}

func TestDecodeCommandErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"nil", nil, ErrFrameTooShort},
		{"3 bytes", []byte{0, 0, 0}, ErrFrameTooShort},
		{"header longer than payload", []byte{0, 0, 0, 5, '{', '}'}, ErrHeaderLength},
		{"rocketmq header longer than payload", []byte{1, 0, 0, 30, 0}, ErrHeaderLength},
		{"serialize type 2", []byte{2, 0, 0, 0}, ErrSerializeType},
		{"serialize type 0x80", []byte{0x80, 0, 0, 2, '{', '}'}, ErrSerializeType},
		{"empty JSON header", []byte{0, 0, 0, 0}, ErrHeaderJSON},
		{"garbage JSON header", []byte{0, 0, 0, 3, 0xFF, 0xFE, 0x00}, ErrHeaderJSON},
		{"empty ROCKETMQ header", []byte{1, 0, 0, 0}, ErrHeaderRocketMQ},
		{"garbage ROCKETMQ header", append([]byte{1, 0, 0, 21}, bytes.Repeat([]byte{0xFF}, 21)...), ErrHeaderRocketMQ},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeCommand(tt.payload)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, c)
		})
	}
}

// TestDecodeCommandBodyAliases: the body is a view of the payload (no copy) whose capacity
// ends with the frame.
func TestDecodeCommandBodyAliases(t *testing.T) {
	c := &RemotingCommand{Code: 10, Body: []byte("hello")}
	frame, err := c.AppendFrame(nil)
	require.NoError(t, err)
	buf := append(frame, "NEXT FRAME"...)
	got, err := DecodeCommand(buf[4:len(frame)])
	require.NoError(t, err)
	require.Equal(t, "hello", string(got.Body))
	buf[len(frame)-1] = 'O'
	require.Equal(t, "hellO", string(got.Body), "aliases the buffer")
	require.Equal(t, len(got.Body), cap(got.Body), "capacity clipped")
	_ = append(got.Body, '!')
	require.Equal(t, "NEXT FRAME", string(buf[len(frame):]))
	// No body: nil.
	c.Body = nil
	frame, err = c.AppendFrame(nil)
	require.NoError(t, err)
	got, err = DecodeCommand(frame[4:])
	require.NoError(t, err)
	require.Nil(t, got.Body)
}

// TestDecodeCommandIntoReuse: a recycled command loses every old field.
func TestDecodeCommandIntoReuse(t *testing.T) {
	old := &RemotingCommand{Code: 1, Remark: "r", Flag: 1, Opaque: 9, Body: []byte("b"),
		ExtFields: map[string]string{"stale": "x"}}
	c := &RemotingCommand{Code: 10}
	frame, err := c.AppendFrame(nil)
	require.NoError(t, err)
	require.NoError(t, DecodeCommandInto(old, frame[4:]))
	require.Equal(t, int32(10), old.Code)
	require.Empty(t, old.Remark)
	require.Zero(t, old.Flag)
	require.Zero(t, old.Opaque)
	require.Nil(t, old.Body)
	require.Empty(t, old.ExtFields, "absent extFields: the reused map is empty")
}

func TestCodeStrings(t *testing.T) {
	require.Equal(t, "SEND_MESSAGE_V2", RequestSendMessageV2.String())
	require.Equal(t, "GET_ROUTEINFO_BY_TOPIC", RequestGetRouteInfoByTopic.String())
	require.Equal(t, "POP_MESSAGE", RequestCode(200050).String())
	require.Equal(t, "RequestCode(9999)", RequestCode(9999).String())
	require.Equal(t, "SUCCESS", ResponseSuccess.String())
	require.Equal(t, "PULL_OFFSET_MOVED", ResponseCode(21).String())
	require.Equal(t, "GO_AWAY", ResponseGoAway.String())
	require.Equal(t, "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS", ResponseCode(2016).String())
	require.Equal(t, "ResponseCode(77)", ResponseCode(77).String())
	require.Equal(t, "JSON", SerializeJSON.String())
	require.Equal(t, "ROCKETMQ", SerializeRocketMQ.String())
	require.Equal(t, "SerializeType(5)", SerializeType(5).String())

	names := []string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP",
		"OMS", "RUST", "NODE_JS"}
	for i, n := range names {
		require.Equal(t, n, LanguageCode(i).String())
		l, ok := ParseLanguageCode(n)
		require.True(t, ok)
		require.Equal(t, LanguageCode(i), l)
	}
	require.Equal(t, LanguageNodeJS, LanguageCode(13))
	_, ok := ParseLanguageCode("go")
	require.False(t, ok, "names are exact")
	require.Equal(t, "LanguageCode(14)", LanguageCode(14).String())

	// Every name is unique, so String is invertible over the known codes.
	seen := map[string]bool{}
	for _, n := range requestCodeNames {
		require.False(t, seen[n], n)
		seen[n] = true
	}
	require.Len(t, requestCodeNames, 111)
	require.Len(t, responseCodeNames, 66)
}
