package readplane

import (
	"errors"
	"slices"
	"strings"

	"github.com/ringmq/ringmq/broker/filter"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Tag filtering of pulls (PROTOCOL.md §7.2, §9).
//
// A ConsumeQueue entry carries the Java String.hashCode of the message's TAGS. A TAG
// subscription ("*" or "tagA || tagB") matches an entry when it is "*" or when the
// entry's code is one of the subscribed tags' codes — exactly RocketMQ's
// ExpressionMessageFilter.isMatchedByConsumeQueue. Two different tags may share a hash
// code; the client re-checks tags after the pull, as with the Java broker.

// tagFilterInlineCodes is how many tag codes a tagFilter holds without a heap slice:
// subscriptions name one to a few tags.
const tagFilterInlineCodes = 8

// tagFilter implements store.MessageFilter for a TAG subscription. Its check never
// allocates; building one from a subscription allocates only past
// tagFilterInlineCodes tags. A built filter is read-only and so safe for concurrent use.
type tagFilter struct {
	all    bool // "*" (or class filter mode): every entry matches
	n      int  // codes in use
	inline [tagFilterInlineCodes]int32
	more   []int32 // the codes when n > tagFilterInlineCodes, sorted
}

// IsMatchedByConsumeQueue reports whether an entry with this tag code belongs to the
// subscription. The code is compared as an int32 (the CQ field is the sign-extended
// Java hash), as Java's codeSet.contains(tagsCode.intValue()) does.
func (f *tagFilter) IsMatchedByConsumeQueue(tagsCode int64) bool {
	if f.all {
		return true
	}
	code := int32(tagsCode)
	if f.n <= tagFilterInlineCodes {
		for _, c := range f.inline[:f.n] {
			if c == code {
				return true
			}
		}
		return false
	}
	_, found := slices.BinarySearch(f.more, code)
	return found
}

// reset empties f for reuse (a parked pull keeps its filter by value).
func (f *tagFilter) reset() {
	f.all, f.n, f.more = false, 0, f.more[:0]
}

// add appends one tag code, ignoring duplicates.
func (f *tagFilter) add(code int32) {
	if f.n < tagFilterInlineCodes {
		for _, c := range f.inline[:f.n] {
			if c == code {
				return
			}
		}
		f.inline[f.n] = code
		f.n++
		return
	}
	if f.n == tagFilterInlineCodes {
		f.more = append(f.more[:0], f.inline[:]...)
	}
	if i, found := slices.BinarySearch(f.more, code); !found {
		f.more = slices.Insert(f.more, i, code)
		f.n++
	}
}

// setFromSubscription fills f from a heartbeat subscription. The tag codes are
// recomputed from tagsSet with Java's UTF-16 hash (the Go client's codeSet hashes
// UTF-8 bytes, PROTOCOL.md §4.3). It does not allocate for up to
// tagFilterInlineCodes tags. The caller has checked that the expression type is TAG.
func (f *tagFilter) setFromSubscription(sd *codec.SubscriptionData) {
	f.reset()
	if sd.ClassFilterMode || sd.SubString == "" || sd.SubString == codec.SubscriptionAll {
		f.all = true
		return
	}
	for _, tag := range sd.TagsSet {
		f.add(codec.JavaHashCode(tag))
	}
}

// errSubscriptionSplit: an expression that yields no tag (e.g. "||"), which Java's
// FilterAPI cannot build either.
var errSubscriptionSplit = errors.New("readplane: subscription expression has no tag")

// setFromExpression parses a TAG expression the way RocketMQ's FilterAPI does: "",
// "*" → all; otherwise split on "||", trim each part and keep the non-empty ones.
// Used when a pull carries its subscription (the SUBSCRIPTION sysFlag).
func (f *tagFilter) setFromExpression(expr string) error {
	f.reset()
	if expr == "" || expr == codec.SubscriptionAll {
		f.all = true
		return nil
	}
	rest := expr
	for rest != "" {
		part, after, _ := strings.Cut(rest, "||")
		rest = after
		if tag := strings.TrimSpace(part); tag != "" {
			f.add(codec.JavaHashCode(tag))
		}
	}
	if f.n == 0 {
		// Java's split drops trailing empty strings; "||" alone builds a subscription
		// that matches nothing. Matching nothing silently would starve the consumer,
		// so refuse it as a parse failure instead.
		return errSubscriptionSplit
	}
	return nil
}

// subscriptionFilter is a pull's filter: a TAG subscription's tag codes, or an SQL92
// subscription's compiled expression (RocketMQ's ExpressionMessageFilter without filter
// bitmaps: every ConsumeQueue entry passes, and the expression decides on the stored
// record's properties). The expression is shared and immutable (filter.Cache).
type subscriptionFilter struct {
	tagFilter
	sql *filter.Expression
}

// storeFilter is what GetMessage gets: the tag filter alone for a TAG subscription, so that
// the store asks nothing of the records; the whole filter (a store.CommitLogFilter) for an
// SQL92 one. Neither conversion allocates (both are pointers).
func (f *subscriptionFilter) storeFilter() store.MessageFilter {
	if f.sql == nil {
		return &f.tagFilter
	}
	return f
}

// IsMatchedByConsumeQueue: an SQL92 subscription passes every entry (no bitmap here).
func (f *subscriptionFilter) IsMatchedByConsumeQueue(tagsCode int64) bool {
	return f.sql != nil || f.tagFilter.IsMatchedByConsumeQueue(tagsCode)
}

// IsMatchedByCommitLog evaluates the SQL92 expression on the stored record's properties.
func (f *subscriptionFilter) IsMatchedByCommitLog(record []byte) bool {
	return f.sql == nil || f.sql.MatchRecord(record)
}

// isMatchedByArrival is the long-polling wake-up check (PullRequestHoldService): the tag
// code for a TAG subscription, the new message's properties for an SQL92 one.
func (f *subscriptionFilter) isMatchedByArrival(tagsCode int64, properties []byte) bool {
	if f.sql != nil {
		return f.sql.MatchProperties(properties)
	}
	return f.tagFilter.IsMatchedByConsumeQueue(tagsCode)
}

// isTagExpressionType is Java's ExpressionType.isTagType: absent, empty or "TAG".
func isTagExpressionType(t string) bool {
	return t == "" || t == codec.ExpressionTypeTag
}
