package goclienttest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/goclient"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

func TestBuildEnvDropsRace(t *testing.T) {
	env := buildEnv([]string{"HOME=/h", "GOFLAGS=-race -ldflags=-checklinkname=0 --race=true", "GOOS=linux"})
	require.Equal(t, []string{"HOME=/h", "GOFLAGS=-ldflags=-checklinkname=0", "GOOS=linux"}, env)
	require.Equal(t, []string{"PATH=/bin"}, buildEnv([]string{"PATH=/bin"}))
}

// The driver answers without a broker: its own calls, the client's pure functions, and the
// client's errors with their text.
func TestDriverAnswers(t *testing.T) {
	d := Start(t)
	stacks, err := d.Stacks()
	require.NoError(t, err)
	require.Contains(t, stacks, "main.main", "the driver's own stacks")

	req := &primitive.MessageExt{}
	req.Topic, req.Body = "Questions", []byte("question")
	req.WithProperty(primitive.PropertyCluster, "C1")
	req.WithProperty(primitive.PropertyCorrelationID, "corr-1")
	req.WithProperty(primitive.PropertyMessageReplyToClient, "127.0.0.1@requester")
	reply, err := d.CreateReplyMessage(req, nil)
	require.NoError(t, err)
	require.Equal(t, "C1_REPLY_TOPIC", reply.Topic)
	require.Equal(t, "corr-1", reply.GetProperty(primitive.PropertyCorrelationID))
	require.Equal(t, "127.0.0.1@requester", reply.GetProperty(primitive.PropertyMessageReplyToClient))
	require.Equal(t, "reply", reply.GetProperty(primitive.PropertyMsgType))

	_, err = d.CreateReplyMessage(&primitive.MessageExt{}, nil)
	require.ErrorContains(t, err, "create reply message fail", "the client's own error text")

	_, err = d.NewProducer(goclient.ProducerOptions{Group: "G", QueueSelector: "by-moon-phase"})
	require.ErrorContains(t, err, `unknown QueueSelector "by-moon-phase"`)
}

// A driver that dies fails the calls made to it at once, with its output, instead of leaving
// them to their timeouts.
func TestDeadDriverFailsCalls(t *testing.T) {
	d := Start(t)
	require.NoError(t, d.cmd.Process.Kill())
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	start := time.Now()
	_, err := d.NewAdmin(goclient.AdminOptions{NameServers: []string{"127.0.0.1:9"}})
	require.ErrorContains(t, err, "the driver is gone")
	p := &Producer{d: d, id: d.id()}
	_, err = p.SendSync(ctx, primitive.NewMessage("T", []byte("x")))
	require.ErrorContains(t, err, "the driver is gone")
	require.Less(t, time.Since(start), 30*time.Second, "not left to a timeout")
	require.True(t, strings.HasPrefix(err.Error(), "goclienttest: SendSync:"), err.Error())
}

// A driver whose test goes away without killing it (a crash, a test timeout: no cleanup runs)
// exits by itself when its requests end.
func TestDriverExitsWhenItsTestGoes(t *testing.T) {
	d := Start(t)
	require.NoError(t, d.client.Close()) // what the end of the test's process does to the pipes
	exited := make(chan error, 1)
	go func() { exited <- d.cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status 0, not killed")
	case <-time.After(30 * time.Second):
		t.Fatal("the driver still runs 30 s after its requests ended")
	}
}
