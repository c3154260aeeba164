// Package bench is ringmq's load generator. It speaks RocketMQ's remoting protocol
// (through codec only) to any RocketMQ-compatible broker — ringmq, Apache RocketMQ — and
// measures from outside: it imports neither store nor broker nor netio, and keeps its own
// lean pipelined connections.
//
// # Pieces
//
//   - Producer: C connections, each with one writer and one reader goroutine and at most W
//     requests in flight (a semaphore of W slots). Requests are matched to responses by
//     opaque. SEND_MESSAGE_V2 (310) with the one-letter header keys, as the Java client
//     sends by default, or SEND_BATCH_MESSAGE (320) with --batch > 1; JSON header
//     serialization. Closed loop by default; open loop with a fixed rate, where one pacer
//     goroutine writes for every connection, waking at most once per tick (pacer.go).
//   - Consumer: PULL_MESSAGE (11) with or without long polling, one pull in flight per
//     queue, records decoded with codec.DecodeRecord; end-to-end latency and lag.
//   - Recorder and Series: per-goroutine HdrHistograms (no locks on the hot path) merged
//     into run-wide histograms and a per-second series.
//   - RunRecord: the JSON run record, .hgrm percentile files and the per-second CSV.
//   - Suite: the broker configuration matrix that `make bench-report` runs.
//
// # Latency
//
// Send latency runs from just before the write of the request to the arrival of its
// response (monotonic clock). In open-loop rate mode every message has an intended send
// time on a fixed schedule (start + i/rate); latency is measured from the intended time,
// not from the actual write, so time a message spent waiting for a free slot or a
// late writer — coordinated omission — is counted. This is what HdrHistogram's
// RecordCorrectedValue approximates after the fact; measuring from the intended time
// is exact for any pattern of stalls (Gil Tene, "How NOT to measure latency"; wrk2 does the
// same). The service time (from the actual write) is kept beside it.
//
// # Message body
//
// A body of at least BodyStampBytes carries the producer's send time so a consumer can
// measure end-to-end latency in nanoseconds instead of BORNTIMESTAMP's milliseconds:
//
//	off  size  field
//	  0  8     send time, Unix nanoseconds, big-endian (stamped just before the write)
//	  8  8     marker "mqbench1": tells a consumer the stamp is there
//	 16  n-16  filler
//
// A consumer that finds no marker (a smaller body, or another producer's message) falls
// back to BORNTIMESTAMP. Both clocks are the wall clock, so end-to-end latency across
// machines includes their clock offset.
package bench
