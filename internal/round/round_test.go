package round

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type recorder struct {
	name string
	log  *[]string
	then func()
}

func (e *recorder) EndRound() {
	*e.log = append(*e.log, e.name)
	if e.then != nil {
		e.then()
	}
}

func TestEndCallsEachDeferredOnceInOrder(t *testing.T) {
	var log []string
	var r Round
	r.End() // empty: nothing
	a, b := &recorder{name: "a", log: &log}, &recorder{name: "b", log: &log}
	c := &recorder{name: "c", log: &log}
	b.then = func() { r.Defer(c) } // deferred while End runs: ended by the same End
	r.Defer(a)
	r.Defer(b)
	require.Equal(t, 2, r.Len())
	r.End()
	require.Equal(t, []string{"a", "b", "c"}, log)
	require.Zero(t, r.Len())
	r.End() // a round is reused: nothing is ended twice
	require.Equal(t, []string{"a", "b", "c"}, log)
	r.Defer(a)
	r.End()
	require.Equal(t, []string{"a", "b", "c", "a"}, log)
}
