package adminclient

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/codec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// peer is a scripted remoting server: each accepted connection runs serve.
type peer struct {
	ln   net.Listener
	done chan struct{}
}

func newPeer(t *testing.T, serve func(nc net.Conn, frames *codec.FrameReader)) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &peer{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			serve(nc, codec.NewFrameReader(nc, 0))
			_ = nc.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-p.done
	})
	return p
}

func (p *peer) addr() string { return p.ln.Addr().String() }

func writeCmd(t *testing.T, nc net.Conn, cmd *codec.RemotingCommand) {
	frame, err := cmd.AppendFrame(nil)
	if err == nil {
		_, err = nc.Write(frame)
	}
	if err != nil {
		t.Errorf("peer write: %v", err)
	}
}

// The response is matched by opaque: a request pushed by the peer and a stale response
// before it are skipped, and the body is the caller's copy.
func TestCallMatchesOpaque(t *testing.T) {
	p := newPeer(t, func(nc net.Conn, frames *codec.FrameReader) {
		for {
			payload, err := frames.Next()
			if err != nil {
				return
			}
			req, err := codec.DecodeCommand(payload)
			if err != nil {
				t.Errorf("peer decode: %v", err)
				return
			}
			writeCmd(t, nc, codec.NewRequest(codec.RequestNotifyConsumerIdsChanged, nil, nil))
			stale := codec.NewResponse(req, codec.ResponseSystemError, "stale")
			stale.Opaque = req.Opaque - 1
			writeCmd(t, nc, stale)
			resp := codec.NewResponse(req, codec.ResponseSuccess, "")
			resp.Body = []byte("code=" + codec.RequestCode(req.Code).String())
			writeCmd(t, nc, resp)
		}
	})
	c := New(time.Second)
	defer c.Close()
	for _, code := range []codec.RequestCode{codec.RequestGetBrokerClusterInfo, codec.RequestGetAllTopicListFromNameServer} {
		resp, err := c.Call(p.addr(), codec.NewRequest(code, nil, nil))
		require.NoError(t, err)
		require.NoError(t, Check(p.addr(), resp))
		require.Equal(t, "code="+code.String(), string(resp.Body))
	}
}

// A peer that never answers costs one timeout; the failed connection is dropped and the
// next call dials again.
func TestCallTimesOutAndRedials(t *testing.T) {
	accepted := make(chan struct{}, 4)
	p := newPeer(t, func(nc net.Conn, frames *codec.FrameReader) {
		accepted <- struct{}{}
		payload, err := frames.Next()
		if err != nil {
			return
		}
		req, err := codec.DecodeCommand(payload)
		if err != nil || req.Code == int32(codec.RequestGetBrokerClusterInfo) {
			_, _ = frames.Next() // silent: wait for the client to give up and close
			return
		}
		writeCmd(t, nc, codec.NewResponse(req, codec.ResponseTopicNotExist, "no route"))
		_, _ = frames.Next()
	})
	c := New(100 * time.Millisecond)
	defer c.Close()
	_, err := c.Call(p.addr(), codec.NewRequest(codec.RequestGetBrokerClusterInfo, nil, nil))
	var te *TransportError
	require.ErrorAs(t, err, &te)
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "%v", err)
	require.Contains(t, err.Error(), "GET_BROKER_CLUSTER_INFO to "+p.addr())

	resp, err := c.Call(p.addr(), codec.NewRequest(codec.RequestGetRouteInfoByTopic, nil, nil))
	require.NoError(t, err)
	err = Check("name server "+p.addr(), resp)
	var re *ResponseError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "name server "+p.addr()+" answered TOPIC_NOT_EXIST (17): no route", err.Error())
	require.NoError(t, Check(p.addr(), resp, codec.ResponseTopicNotExist))
	require.Len(t, accepted, 2, "the timed-out connection was replaced")
}

func TestCallDialErrorAndClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := New(time.Second)
	_, err = c.Call(addr, codec.NewRequest(codec.RequestGetBrokerClusterInfo, nil, nil))
	var te *TransportError
	require.ErrorAs(t, err, &te)
	require.Equal(t, addr, te.Addr)
	require.NoError(t, c.Close())
	_, err = c.Call(addr, codec.NewRequest(codec.RequestGetBrokerClusterInfo, nil, nil))
	require.ErrorIs(t, err, ErrClosed)
}

// A signed request carries AccessKey and a Signature over the other header values in key
// order and the body (the rule broker/acl verifies), computed here independently.
func TestCredentialsSign(t *testing.T) {
	req := codec.NewRequest(codec.RequestUpdateAndCreateTopic, map[string]string{"topic": "T", "perm": "6"}, []byte("body"))
	Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}.Sign(req)
	require.Equal(t, "rocketmq2", req.ExtFields["AccessKey"])
	// Key order: AccessKey, perm, topic.
	mac := hmac.New(sha1.New, []byte("12345678"))
	mac.Write([]byte("rocketmq2" + "6" + "T" + "body"))
	require.Equal(t, base64.StdEncoding.EncodeToString(mac.Sum(nil)), req.ExtFields["Signature"])

	unsigned := codec.NewRequest(codec.RequestGetBrokerClusterInfo, nil, nil)
	Credentials{}.Sign(unsigned)
	require.Nil(t, unsigned.ExtFields)
}
