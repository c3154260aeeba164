// Package ha is master-slave replication, wire-compatible with Apache RocketMQ 4.x (PROTOCOL.md §13.2).
//
// A slave connects to the master's HA port (haListenPort, default listenPort + 1). There is no handshake
// and no remoting framing: two big-endian byte streams.
//
//	slave → master: report, repeated         master → slave: transfer frame, repeated
//	+--------------------------+             +----------------+--------------+------------------+
//	| slaveMaxPhyOffset  int64 |             | phyOffset int64| bodySize int32| CommitLog bytes |
//	+--------------------------+             +----------------+--------------+------------------+
//	          8 bytes                              8                 4          bodySize (0: heartbeat)
//
// The master (Server) sends the CommitLog bytes from the offset the slave reports, at most
// haTransferBatchSize per frame while the slave follows closely and up to CatchUpBatchSize (1 MiB) while it
// is behind, never across a CommitLog file, straight from the mapped file to
// the socket in one vectored write, or for catch-up frames with sendfile(2) from the CommitLog file: no copy
// through a Go buffer, and none through user memory at all for the catch-up. The slave (Client) hands each body to its
// store, which writes it into its own CommitLog at the same physical offset, then reports its new end (after
// every frame that moved it, and when no report went out for haSendHeartbeatInterval); its store dispatches
// ConsumeQueue and IndexFile entries from those bytes as a master's does.
//
// A SYNC_MASTER put waits for any slave to report an offset past the message's end (Replicas.Wait): no
// goroutine or timer per waiter; the goroutine that reads the report completes the waiters it covers.
//
// The package knows the store only through the small interfaces in store.go; it imports neither the
// broker nor the store.
package ha
