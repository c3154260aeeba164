// Command mqadmin administers any RocketMQ-compatible cluster (ringmq or Apache RocketMQ
// 4.x) over the remoting protocol, with the command names and flags of RocketMQ's mqadmin so
// that operators' habits and scripts carry over:
//
//	mqadmin clusterList -n 127.0.0.1:9876
//	mqadmin topicRoute -n "ns1:9876;ns2:9876" -t TopicTest
//	mqadmin consumerProgress -g GroupA --output json
//
// -n (name servers, "host:port;host:port") falls back to the NAMESRV_ADDR environment
// variable as in RocketMQ. Output is a plain aligned table with RocketMQ's columns, or JSON
// with stable field names under --output json. A failure prints what was asked, of whom and
// what came back (response code name and number, remark) on stderr and exits 1; a command
// line mistake exits 2.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
