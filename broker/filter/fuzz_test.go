package filter

import (
	"testing"
)

// FuzzCompile: the parser never panics on any text; an expression that compiles prints
// as text that compiles to an expression printing the same, and both evaluate alike on
// any properties (evaluation never panics either).
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"a = 1", "TAGS IN ('TagA', 'TagB') AND price BETWEEN 10 AND 20.5",
		"NOT (a IS NULL) OR b <> 'x''y'", "a NOT BETWEEN -1 AND 2e3", "x NOT IN ('1')",
		"a = 10 = TRUE", "-a IS NULL", "((((TRUE))))", "a > b", "t", "a = 1 -- c\n OR b = 2",
		"/* c */ a = .5e1", "a = 0L", "a > 'x'", "1", "a = 'open", "a IS NOT", "",
	} {
		f.Add(seed, sample)
	}
	f.Add("a = 1", []byte("a\x011\x02\x01\x02\x02b"))
	f.Fuzz(func(t *testing.T, expr string, props []byte) {
		e, err := Compile(expr)
		if err != nil {
			if _, ok := err.(*CompileError); !ok {
				t.Fatalf("%q: error of type %T", expr, err)
			}
			return
		}
		printed := e.String()
		again, err := Compile(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not compile: %v", expr, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("%q printed as %q, then as %q", expr, printed, again.String())
		}
		if e.MatchProperties(props) != again.MatchProperties(props) {
			t.Fatalf("%q and its print %q evaluate differently on %q", expr, printed, props)
		}
	})
}

// FuzzJavaNumbers: Java's number readers never panic, and what they accept reads back.
func FuzzJavaNumbers(f *testing.F) {
	for _, seed := range []string{"10", "-2147483648", "2147483648", "+7", "\u0661\u0662", " 1.5d ", "NaN",
		"-Infinity", "0x1.8p1", "1e", ".", "-", "1_0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := javaParseInt(s, 32); ok && (v < -1<<31 || v > 1<<31-1) {
			t.Fatalf("%q read as Integer %d", s, v)
		}
		javaParseInt(s, 64)
		javaParseDouble(s)
	})
}
