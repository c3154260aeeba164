// Package readplane is the broker's read plane: everything a consumer or an admin tool reads
// from the message store.
//
//	PULL_MESSAGE 11, LITE_PULL_MESSAGE 361   pull.go, with long polling (longpoll.go) and the
//	                                         TAG and SQL92 filters (filter.go, broker/filter)
//	QUERY_MESSAGE 12, VIEW_MESSAGE_BY_ID 33  query.go
//	GET_MAX_OFFSET 30, GET_MIN_OFFSET 31,    queueinfo.go
//	SEARCH_OFFSET_BY_TIMESTAMP 29,
//	GET_EARLIEST_MSG_STORETIME 32
//
// # What it depends on
//
// New takes everything explicitly (Deps), as small interfaces the broker's parts satisfy:
// the store's read methods (Store), the topic table (Topics), the subscription-group table
// (Groups, which may auto-create a group) and the consumer offsets (Offsets, for a pull's
// COMMIT_OFFSET flag) from package metadata, the consumers' heartbeat subscriptions
// (Subscriptions), and the broker's pull pool (Pool, for re-running woken pulls). Settings
// are plain values the broker derives from its Config once, among them HotMaxBehindBytes,
// which the broker computes (RAM × accessMessageInMemoryMaxRatio / 100) because its send
// plane uses the same bound for send-backs. The plane registers its own collectors
// (ringmq_broker_pull_runs_total by "where", ringmq_broker_pulls_held) and counts a full
// hold table in the broker's ringmq_broker_system_busy_total{reason="pull_hold_full"}
// (Deps.HoldFull). It does not import package broker.
//
// # Where each request runs
//
// The broker's dispatch table (broker/routes.go) places every request. GET_MAX_OFFSET and
// GET_MIN_OFFSET read in-memory counters and answer on the event loop (ProcessGetMaxOffset,
// ProcessGetMinOffset). The others are split handlers: they decode (and for a pull, check)
// on the event loop and either answer there and return nil, or return the rest of the work
// (it may fault pages in from disk), which the dispatcher queues on the route's pool — the
// pull pool for pulls, the query pool for the others. Queries, views, searches by time and
// earliest store times always continue on the pool; a pull does only when its data is cold.
//
// # The path of a pull
//
//  1. Decode: ProcessPullMessage takes a pooled pullRequest and decodes the header into it
//     (SYSTEM_ERROR naming the field when it does not decode).
//  2. Checks, in the Java broker's order (checkPull): broker readable, group exists or is
//     auto-created, group consumeEnable, topic exists and readable, queueId in range, then
//     the subscription — from the request (SUBSCRIPTION sysFlag) or from the group's
//     heartbeat — built into the request's filter (filter.go, no allocation): tag codes,
//     or an SQL92 expression compiled once per subscription version (broker/filter.Cache).
//  3. Hot or cold (pullIsHot): in-memory look-ups only; an offset outside [min, max) or a
//     first entry at most HotMaxBehindBytes behind the CommitLog's end is hot and the store
//     read runs on the event loop at once; otherwise ProcessPullMessage returns it for the
//     pull pool.
//  4. Store read (runPull): GetMessage with the filter; the COMMIT_OFFSET flag stores the
//     commit offset on the first pass (not on a slave); the GetMessageStatus maps to the
//     response code (pullStatusCode, PROTOCOL.md §9).
//  5. Long polling: PULL_NOT_FOUND on the first pass of a SUSPEND pull parks the request in
//     the hold service (longpoll.go) instead of answering. The store's arriving listener
//     (OnMessageArriving, wired by the broker) wakes it when a matching entry is appended,
//     the periodic sweep when its queue grew, the deadline when its suspend timeout passed;
//     the woken pull runs step 4 once more (never parking again) on the pull pool, or on the
//     hold goroutine when the pool refuses it. A full hold table answers SYSTEM_BUSY; Stop
//     answers every parked pull.
//  6. Answer: code, remark (the status name) and the four offsets; a FOUND body is the
//     store's mapped record slices, written as one vectored write, whose store references
//     are released once netio is done with them. The pullRequest goes back to its pool.
//
// A hot pull allocates nothing on the way (TestPullPathAllocations and BenchmarkPullPath in
// package broker hold it to 0 allocs/op).
package readplane
