package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// Permission bits of QueueData.Perm (PermName).
const (
	permWrite int32 = 2
	permRead  int32 = 4
)

// autoCreateTemplateTopic is the topic brokers copy when a send creates a topic
// (autoCreateTopicEnable), and whose route clients use for a topic that has none yet.
const autoCreateTemplateTopic = "TBW102"

// defaultQueues is the queue count used when neither a route nor --queues says.
const defaultQueues = 4

// BrokerQueues is one broker (master) and the queue ids of the topic a run uses on it.
type BrokerQueues struct {
	BrokerName string  `json:"broker_name,omitempty"`
	Addr       string  `json:"addr"`
	Queues     []int32 `json:"queues"`
}

// String formats the target for logs: "addr(brokerName) queues [...]".
func (b BrokerQueues) String() string {
	return fmt.Sprintf("%s(%s) queues %v", b.Addr, b.BrokerName, b.Queues)
}

func queueRange(n int) []int32 {
	q := make([]int32, n)
	for i := range q {
		q[i] = int32(i)
	}
	return q
}

// fetchRoute asks the name servers (';'-separated, tried in order) for topic's route.
// A TOPIC_NOT_EXIST answer is returned as an ErrResponse error with that code.
func fetchRoute(ctx context.Context, namesrv, topic string, timeout time.Duration) (*codec.TopicRouteData, error) {
	var errs []error
	for addr := range strings.SplitSeq(namesrv, ";") {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		rd, err := fetchRouteFrom(ctx, addr, topic, timeout)
		if err == nil {
			return rd, nil
		}
		errs = append(errs, err)
		var re *responseErr
		if errors.As(err, &re) && re.code == int32(codec.ResponseTopicNotExist) {
			return nil, err // the name server answered: no need to ask the next one
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%w: --namesrv %q has no address", ErrConfig, namesrv)
	}
	return nil, errors.Join(errs...)
}

// responseErr is the error of a control request answered with an error code.
type responseErr struct {
	code int32
	err  error
}

func (e *responseErr) Error() string { return e.err.Error() }
func (e *responseErr) Unwrap() error { return e.err }

func fetchRouteFrom(ctx context.Context, addr, topic string, timeout time.Duration) (*codec.TopicRouteData, error) {
	c, err := dialControl(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	h := codec.GetRouteInfoRequestHeader{Topic: topic}
	ext := map[string]string{}
	h.Encode(ext)
	req := newRequest(codec.RequestGetRouteInfoByTopic, ext, nil)
	resp, err := c.callOK(req)
	if err != nil {
		if resp != nil {
			return nil, &responseErr{code: resp.Code, err: err}
		}
		return nil, err
	}
	rd, err := codec.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: route of %q from %s: %w", topic, addr, err)
	}
	return rd, nil
}

// isTopicNotExist reports whether err is a TOPIC_NOT_EXIST answer.
func isTopicNotExist(err error) bool {
	var re *responseErr
	return errors.As(err, &re) && re.code == int32(codec.ResponseTopicNotExist)
}

// routeQueues turns a route into masters and queue ids: queues whose permission has
// perm, ids 0..n-1 with n the write (perm write) or read (perm read) queue count, capped
// at limit when limit > 0. Brokers are sorted by name, like the clients do; brokers
// without a master (id 0) address are skipped.
func routeQueues(rd *codec.TopicRouteData, perm int32, limit int) []BrokerQueues {
	masters := map[string]string{}
	for _, bd := range rd.BrokerDatas {
		if addr, ok := bd.BrokerAddrs[0]; ok && addr != "" {
			masters[bd.BrokerName] = addr
		}
	}
	var out []BrokerQueues
	for _, qd := range rd.QueueDatas {
		addr, ok := masters[qd.BrokerName]
		if !ok || qd.Perm&perm == 0 {
			continue
		}
		n := int(qd.WriteQueueNums)
		if perm == permRead {
			n = int(qd.ReadQueueNums)
		}
		if limit > 0 {
			n = min(n, limit)
		}
		if n <= 0 {
			continue
		}
		out = append(out, BrokerQueues{BrokerName: qd.BrokerName, Addr: addr, Queues: queueRange(n)})
	}
	slices.SortFunc(out, func(a, b BrokerQueues) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	return out
}

// createTopic sends UPDATE_AND_CREATE_TOPIC for topic with queues read and write queues
// to the broker at addr.
func createTopic(ctx context.Context, addr, topic string, queues int, timeout time.Duration) error {
	c, err := dialControl(ctx, addr, timeout)
	if err != nil {
		return err
	}
	defer c.close()
	h := codec.UpdateAndCreateTopicRequestHeader{
		Topic:           topic,
		DefaultTopic:    autoCreateTemplateTopic,
		ReadQueueNums:   int32(queues),
		WriteQueueNums:  int32(queues),
		Perm:            permRead | permWrite,
		TopicFilterType: codec.TopicFilterSingleTag,
	}
	ext := map[string]string{}
	h.Encode(ext)
	_, err = c.callOK(newRequest(codec.RequestUpdateAndCreateTopic, ext, nil))
	return err
}

// producerTargets decides where a producer sends (see ProducerConfig).
func producerTargets(ctx context.Context, cfg *ProducerConfig) ([]BrokerQueues, error) {
	queues := cfg.Queues
	if cfg.Broker != "" {
		if queues == 0 {
			queues = defaultQueues
		}
		if cfg.CreateTopic {
			if err := createTopic(ctx, cfg.Broker, cfg.Topic, queues, cfg.DialTimeout); err != nil {
				return nil, err
			}
		}
		return []BrokerQueues{{Addr: cfg.Broker, Queues: queueRange(queues)}}, nil
	}
	rd, err := fetchRoute(ctx, cfg.Namesrv, cfg.Topic, cfg.DialTimeout)
	switch {
	case err == nil:
		if t := routeQueues(rd, permWrite, queues); len(t) > 0 {
			return t, nil
		}
		return nil, fmt.Errorf("%w: topic %q has no writable queue with a master", ErrNoRoute, cfg.Topic)
	case !isTopicNotExist(err):
		return nil, err
	}
	// No route yet: find the masters through the auto-create template's route, as the
	// clients do (PROTOCOL §10).
	if queues == 0 {
		queues = defaultQueues
	}
	tbw, err := fetchRoute(ctx, cfg.Namesrv, autoCreateTemplateTopic, cfg.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: topic %q has no route and %s cannot be read: %w", ErrNoRoute, cfg.Topic, autoCreateTemplateTopic, err)
	}
	masters := routeQueues(tbw, permWrite, queues)
	if len(masters) == 0 {
		return nil, fmt.Errorf("%w: topic %q has no route and %s has no writable master", ErrNoRoute, cfg.Topic, autoCreateTemplateTopic)
	}
	if !cfg.CreateTopic {
		// The broker creates the topic on the first send (defaultTopic TBW102), with
		// min(defaultTopicQueueNums, TBW102's write queues) queues.
		return masters, nil
	}
	for i := range masters {
		if err := createTopic(ctx, masters[i].Addr, cfg.Topic, queues, cfg.DialTimeout); err != nil {
			return nil, err
		}
		masters[i].Queues = queueRange(queues)
	}
	return masters, nil
}

// consumerTargets decides where a consumer pulls from (see ConsumerConfig).
func consumerTargets(ctx context.Context, cfg *ConsumerConfig) ([]BrokerQueues, error) {
	if cfg.Broker != "" {
		queues := cfg.Queues
		if queues == 0 {
			queues = defaultQueues
		}
		return []BrokerQueues{{Addr: cfg.Broker, Queues: queueRange(queues)}}, nil
	}
	rd, err := fetchRoute(ctx, cfg.Namesrv, cfg.Topic, cfg.DialTimeout)
	if err != nil {
		if isTopicNotExist(err) {
			return nil, fmt.Errorf("%w: %w", ErrNoRoute, err)
		}
		return nil, err
	}
	t := routeQueues(rd, permRead, cfg.Queues)
	if len(t) == 0 {
		return nil, fmt.Errorf("%w: topic %q has no readable queue with a master", ErrNoRoute, cfg.Topic)
	}
	return t, nil
}
