// Package admin is the broker's admin plane: the requests of mqadmin, the Go client's admin
// package and dashboards that change or inspect the broker's topics and subscription
// groups, and report its consumers, producers, offsets and runtime figures.
//
//	17  UPDATE_AND_CREATE_TOPIC             215 DELETE_TOPIC_IN_BROKER
//	21  GET_ALL_TOPIC_CONFIG                351 GET_TOPIC_CONFIG
//	200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG
//	207 DELETE_SUBSCRIPTIONGROUP            352 GET_SUBSCRIPTIONGROUP_CONFIG
//	28  GET_BROKER_RUNTIME_INFO             26  GET_BROKER_CONFIG
//	202 GET_TOPIC_STATS_INFO                208 GET_CONSUME_STATS
//	203 GET_CONSUMER_CONNECTION_LIST        204 GET_PRODUCER_CONNECTION_LIST
//	43  GET_ALL_CONSUMER_OFFSET             45  GET_ALL_DELAY_OFFSET
//	300 QUERY_TOPIC_CONSUME_BY_WHO          222 INVOKE_BROKER_TO_RESET_OFFSET
//	25  UPDATE_BROKER_CONFIG                315 VIEW_BROKER_STATS_DATA (stats.go)
//	317 GET_BROKER_CONSUME_STATS
//
// and relays three to a consumer's connection (relay.go):
//
//	307 GET_CONSUMER_RUNNING_INFO           309 CONSUME_MESSAGE_DIRECTLY
//	223 INVOKE_BROKER_TO_GET_CONSUMER_STATUS
//
// # Where it runs
//
// Every handler runs on the broker's admin pool (broker/routes.go): they write config files,
// walk whole tables, read records from the store, or wait for a registration round. A
// handler is a method of Plane taking a *remoting.Request; it answers through the
// request's Reply, once.
//
// # What it depends on
//
// Everything comes in through Deps, built once by the broker (package broker, which this
// package does not import): the metadata tables (topics, subscription groups, consumer
// offsets), a few store methods (Store), the live consumers and producers (Consumers,
// Producers; Consumers also writes oneway requests to a group's members), the schedule service's cursors (DelayOffsets), the depths and
// head waits of the broker's pools, the statistics windows (Stats: VIEW_BROKER_STATS_DATA and
// consumeTps), the store's directories for the disk figures (statfs), the broker's settings as key=value pairs with their version and a way to change them
// (UpdateConfig: the broker checks, keeps and applies them), a way to wait for a registration round
// with the name servers, whether the broker is a slave, its boot time, a clock and a logger.
// RuntimeStats, the once-a-second sampler behind the TPS figures of GET_BROKER_RUNTIME_INFO,
// lives here too; the broker runs its ticker as one of its services.
//
// The plane keeps no state of its own beyond what Deps gives it; it has no metrics.
package admin
