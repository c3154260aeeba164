package controlled

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// controllerClient sends a broker's requests to the controller leader: controllerAddr lists the
// controllers (or the name servers that embed them); a follower answers CONTROLLER_NOT_LEADER with the
// leader's address, which the next try goes to. Safe for concurrent use.
type controllerClient struct {
	addrs   []string
	net     *netio.Client
	timeout time.Duration
	leader  string // the last leader that answered; guarded by the caller's single goroutine use
}

// errControllerCode is a controller answer other than SUCCESS.
type errControllerCode struct {
	code   codec.ResponseCode
	remark string
}

func (e *errControllerCode) Error() string {
	return fmt.Sprintf("controller answered %s: %s", e.code, e.remark)
}

// controllerCode is the controller's answer code in err, or -1.
func controllerCode(err error) codec.ResponseCode {
	var ce *errControllerCode
	if errors.As(err, &ce) {
		return ce.code
	}
	return -1
}

func newControllerClient(addrList string, timeout time.Duration, logger *slog.Logger) (*controllerClient, error) {
	var addrs []string
	for _, a := range strings.Split(addrList, ";") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("controlled: controllerAddr names no controller")
	}
	cfg := netio.DefaultClientConfig()
	cl, err := netio.NewClient(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &controllerClient{addrs: addrs, net: cl, timeout: timeout}, nil
}

func (c *controllerClient) close() error { return c.net.Close() }

// headerEncoder is a request header.
type headerEncoder interface{ Encode(map[string]string) }

// invoke sends the request to the leader and returns its SUCCESS answer. It tries the last leader, then
// every address, following CONTROLLER_NOT_LEADER's hint; any other code is an errControllerCode.
func (c *controllerClient) invoke(ctx context.Context, code codec.RequestCode, h headerEncoder, body []byte) (*codec.RemotingCommand, error) {
	tries := make([]string, 0, 2*len(c.addrs)+1)
	if c.leader != "" {
		tries = append(tries, c.leader)
	}
	tries = append(tries, c.addrs...)
	var lastErr error
	for i := 0; i < len(tries) && i < 2*len(c.addrs)+2; i++ {
		ext := map[string]string{}
		if h != nil {
			h.Encode(ext)
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		resp, err := c.net.Invoke(cctx, tries[i], codec.NewRequest(code, ext, body))
		cancel()
		if err != nil {
			lastErr = fmt.Errorf("controller %s: %w", tries[i], err)
			if c.leader == tries[i] {
				c.leader = ""
			}
			continue
		}
		switch codec.ResponseCode(resp.Code) {
		case codec.ResponseSuccess:
			c.leader = tries[i]
			return resp, nil
		case codec.ResponseControllerNotLeader:
			lastErr = &errControllerCode{code: codec.ResponseCode(resp.Code), remark: resp.Remark}
			if hint := resp.ExtFields["controllerLeaderAddress"]; hint != "" && hint != tries[i] {
				tries = append(tries[:i+1], append([]string{hint}, tries[i+1:]...)...)
			}
			continue
		}
		c.leader = tries[i]
		return nil, &errControllerCode{code: codec.ResponseCode(resp.Code), remark: resp.Remark}
	}
	if lastErr == nil {
		lastErr = errors.New("no controller answered")
	}
	return nil, lastErr
}
