package readplane

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func TestTagFilterFromExpression(t *testing.T) {
	var f tagFilter
	require.NoError(t, f.setFromExpression("*"))
	require.True(t, f.IsMatchedByConsumeQueue(12345))
	require.NoError(t, f.setFromExpression(""))
	require.True(t, f.IsMatchedByConsumeQueue(0))

	require.NoError(t, f.setFromExpression("TagA || TagB||  TagC  "))
	for _, tag := range []string{"TagA", "TagB", "TagC"} {
		require.True(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte(tag))), tag)
	}
	require.False(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("TagD"))))
	require.False(t, f.IsMatchedByConsumeQueue(0), "an untagged message does not match a tag list")
	// The CQ holds the sign-extended int32 hash; only its low 32 bits count.
	neg := codec.TagsHashCode([]byte("ÿÿÿÿÿÿÿ"))
	require.NoError(t, f.setFromExpression("ÿÿÿÿÿÿÿ"))
	require.True(t, f.IsMatchedByConsumeQueue(neg))
	require.True(t, f.IsMatchedByConsumeQueue(int64(uint32(neg))))

	require.ErrorIs(t, f.setFromExpression("||"), errSubscriptionSplit)
	require.ErrorIs(t, f.setFromExpression(" || "), errSubscriptionSplit)
}

func TestTagFilterManyTags(t *testing.T) {
	var f tagFilter
	tags := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t1"}
	sd := codec.SubscriptionData{SubString: "many", TagsSet: tags}
	f.setFromSubscription(&sd)
	require.Equal(t, 11, f.n, "duplicates are dropped")
	for _, tag := range tags {
		require.True(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte(tag))), tag)
	}
	require.False(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("t11"))))
	// Reuse for a short list keeps working.
	f.setFromSubscription(&codec.SubscriptionData{SubString: "x", TagsSet: []string{"x"}})
	require.True(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("x"))))
	require.False(t, f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("t0"))))
	f.setFromSubscription(&codec.SubscriptionData{SubString: "*"})
	require.True(t, f.IsMatchedByConsumeQueue(1))
	f.setFromSubscription(&codec.SubscriptionData{SubString: "x", ClassFilterMode: true})
	require.True(t, f.IsMatchedByConsumeQueue(1))
}

func TestTagFilterUsesJavaHashNotClientCodes(t *testing.T) {
	// The Go client hashes UTF-8 bytes into codeSet; the ConsumeQueue holds Java's hash.
	sd := codec.SubscriptionData{SubString: "Ünï", TagsSet: []string{"Ünï"}, CodeSet: codec.TagCodeSet{1, 2, 3}}
	var f tagFilter
	f.setFromSubscription(&sd)
	require.True(t, f.IsMatchedByConsumeQueue(int64(codec.JavaHashCode("Ünï"))))
	require.False(t, f.IsMatchedByConsumeQueue(1))
}

func TestTagFilterDoesNotAllocate(t *testing.T) {
	sd := codec.SubscriptionData{SubString: "a || b || c", TagsSet: []string{"a", "b", "c"}}
	var f tagFilter
	var matched int
	allocs := testing.AllocsPerRun(1000, func() {
		f.setFromSubscription(&sd)
		if f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("b"))) {
			matched++
		}
		if err := f.setFromExpression("a || c"); err != nil {
			panic(err)
		}
		if f.IsMatchedByConsumeQueue(codec.TagsHashCode([]byte("c"))) {
			matched++
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, 2002, matched) // AllocsPerRun runs the function once more to warm up
}
