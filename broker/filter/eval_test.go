package filter

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// props encodes name, value pairs as a record's properties.
func props(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = codec.AppendProperty(b, kv[i], kv[i+1])
	}
	return b
}

// sample is the property set most rows evaluate against. Every property is a string, as
// Java's MessageEvaluationContext hands them to the expressions.
var sample = props(
	"a", "10",
	"b", "9",
	"s", "abc",
	"f", "1.5",
	"t", "true",
	"big", "9999999999",
	"n", "NaN",
	"w", " 12 ",
	"d", "2.5d",
	"u", "\u0661\u0662", // Arabic-Indic digits one, two
	"p", "+7",
	"L", "9007199254740993",
	"q", "it's",
	"TAGS", "TagA",
	"KEYS", "k1 k2",
)

// TestEvaluateJavaSemantics checks expressions against property sets. Each row's want is
// what RocketMQ 4.9.8's classes give (ComparisonExpression, LogicExpression,
// UnaryExpression, UnaryInExpression; ExpressionMessageFilter matches only on TRUE and
// treats an exception as no match); the comment says why where it is not obvious.
func TestEvaluateJavaSemantics(t *testing.T) {
	rows := []struct {
		expr  string
		props []byte
		want  bool
	}{
		// Equality across types: the right side converts the property (__compare).
		{"a = 10", sample, true},                 // Integer.valueOf("10")
		{"a = '10'", sample, true},               // String.equals
		{"a = 10.0", sample, true},               // Double.valueOf("10")
		{"a = 10L", sample, true},                // 10L is narrowed to an Integer
		{"f = 1.5", sample, true},                // Double.valueOf("1.5")
		{"f = 1", sample, false},                 // Integer.valueOf("1.5") throws: no match
		{"f > 1", sample, false},                 // the same failure under '>', although 1.5 > 1
		{"f > 1.0", sample, true},                // Double.valueOf("1.5") > 1.0
		{"a > 5", sample, true},                  //
		{"a >= 10", sample, true},                //
		{"a < 10", sample, false},                //
		{"a <= 10", sample, true},                //
		{"big > 5", sample, false},               // Integer.valueOf("9999999999") overflows: no match
		{"big > 5000000000", sample, true},       // a Long literal: Long.valueOf
		{"L = 9007199254740992.0", sample, true}, // Double.valueOf rounds 2^53+1 to 2^53
		{"w = 12.0", sample, true},               // Double.valueOf trims the spaces
		{"w = 12", sample, false},                // Integer.valueOf does not
		{"d = 2.5", sample, true},                // Double.valueOf takes a trailing d
		{"u = 12", sample, true},                 // Integer.valueOf takes any Unicode decimal digits
		{"u = 12.0", sample, false},              // Double.valueOf only ASCII ones
		{"p = 7", sample, true},                  // a leading + is accepted
		{"n > 1.0", sample, true},                // Double.compare puts NaN above every number
		{"n < 1.0", sample, false},               //
		{"1 = 1.0", sample, true},                // Integer vs Double: promoted
		{"10 = a", sample, true},                 // Integer on the left converts the String on the right
		{"s = 'abc'", sample, true},              //
		{"s <> 'abc'", sample, false},            //
		{"s <> 'x'", sample, true},               //
		{"s > 1", sample, false},                 // Integer.valueOf("abc") throws
		{"q = 'it''s'", sample, true},            // '' in a literal is one quote

		// Two properties: '=' compares strings, '<' and '>' read both as doubles.
		{"a = b", sample, false}, //
		{"a > b", sample, true},  // 10 > 9 as numbers ("10" < "9" as strings)
		{"s > a", sample, false}, // Double.valueOf("abc") throws

		// Booleans.
		{"t = TRUE", sample, true},      // Boolean.valueOf("true")
		{"s = FALSE", sample, true},     // Boolean.valueOf("abc") is false, so equal to FALSE
		{"TRUE = t", sample, false},     // a Boolean on the left casts the String to String: ClassCastException
		{"t", sample, false},            // a property as a condition is a String, not a Boolean: FALSE
		{"NOT t", sample, true},         // NOT FALSE
		{"NOT a = 'x'", sample, false},  // (NOT a) = 'x': TRUE against a String throws
		{"a = 10 = TRUE", sample, true}, // (a = 10) = TRUE
		{"(a = 10) = 1", sample, false}, // Boolean vs Integer compares as -1: not equal
		{"(a = 10) <> 1", sample, true}, // and so unequal
		{"TRUE", sample, true},
		{"FALSE", sample, false},
		{"NULL", sample, false},          // NULL is not TRUE
		{"TRUE AND NULL", sample, false}, // NULL

		// Missing properties are NULL: comparisons with them are NULL, never TRUE.
		{"missing = 1", sample, false},
		{"missing <> 1", sample, false},                // NOT NULL is NULL
		{"NOT (missing = 1)", sample, false},           //
		{"missing > 1", sample, false},                 //
		{"missing IS NULL", sample, true},              //
		{"missing IS NOT NULL", sample, false},         //
		{"a IS NULL", sample, false},                   //
		{"a IS NOT NULL", sample, true},                //
		{"NOT missing", sample, false},                 // NOT NULL
		{"A = 10", sample, false},                      // names are case-sensitive: A is missing
		{"missing = 1 OR a = 10", sample, true},        // NULL OR TRUE
		{"missing = 1 AND a = 10", sample, false},      // NULL AND TRUE is NULL
		{"missing = 1 OR a = 11", sample, false},       // NULL OR FALSE is NULL
		{"NOT (missing = 1 OR a = 11)", sample, false}, // NOT NULL
		{"a IS NULL", nil, true},                       // no properties at all
		{"TRUE", nil, true},

		// Evaluation errors end the whole expression, unless a side already decided it.
		{"s > 1 OR a = 10", sample, false},       // the left side throws first
		{"a = 10 OR s > 1", sample, true},        // TRUE decides OR before the right side runs
		{"NOT (s > 1)", sample, false},           // an error is not FALSE
		{"NOT (a = 11 AND s > 1)", sample, true}, // FALSE decides AND; NOT FALSE

		// Signs: negating a property (a String) gives NULL.
		{"-a < 0", sample, false},
		{"-a IS NULL", sample, true}, // although a is present
		{"a > -5", sample, true},
		{"a = - -10", sample, true},
		{"a = +10", sample, true},

		// BETWEEN is >= AND <=, NOT BETWEEN is < OR >.
		{"a BETWEEN 1 AND 10", sample, true}, // inclusive
		{"a BETWEEN 11 AND 20", sample, false},
		{"a NOT BETWEEN 1 AND 5", sample, true},
		{"a BETWEEN 5 AND -1", sample, false},    // -1 is no literal (a negation): not checked, never true
		{"a NOT BETWEEN 10 AND 1", sample, true}, // NOT BETWEEN checks no order: a > 1
		{"missing BETWEEN 1 AND 2", sample, false},
		{"missing NOT BETWEEN 1 AND 2", sample, false},
		{"f BETWEEN 1.0 AND 2.0", sample, true},
		{"f BETWEEN 1.0 AND 2", sample, false}, // f <= 2 reads f with Integer.valueOf("1.5"), which throws

		// IN compares strings exactly.
		{"TAGS = 'TagA'", sample, true},
		{"TAGS IN ('TagA', 'TagB')", sample, true},
		{"TAGS IN ('TagB', 'TagC', 'TagD', 'TagE', 'TagA')", sample, true},
		{"TAGS NOT IN ('TagA')", sample, false},
		{"TAGS NOT IN ('TagB')", sample, true},
		{"missing IN ('x')", sample, false},
		{"missing NOT IN ('x')", sample, false}, // NULL
		{"a IN ('10')", sample, true},
		{"f IN ('1.50')", sample, false},
		{"KEYS = 'k1 k2'", sample, true},
		{"TAGS IS NOT NULL AND TAGS <> 'TagB'", sample, true},

		// Lexical details.
		{"a = 10 and s = 'abc'", sample, true}, // keywords in any case
		{"a = 10 garbage", sample, true},       // the selector ends where the grammar does
		{"a LIKE 'x'", sample, false},          // "a" (LIKE is not SQL92 here): a String, FALSE
		{"a = 10 -- comment\n AND s = 'abc'", sample, true},
		{"a = /* comment */ 10", sample, true},
		{"a = 0L", props("a", "0"), true},  // "0" then the identifier L, ignored
		{"a = 007", props("a", "0"), true}, // "0", then "07" is never read
		{"a = 5.", props("a", "5"), true},  // 5. is a float
		{"a = .5e1", props("a", "5"), true},
	}
	for _, r := range rows {
		e, err := Compile(r.expr)
		require.NoError(t, err, r.expr)
		require.Equal(t, r.want, e.MatchProperties(r.props), "%s", r.expr)
	}
}

// TestCompileErrors: what RocketMQ's parser refuses, with the exception it names.
func TestCompileErrors(t *testing.T) {
	rows := []struct{ expr, class, reason string }{
		{"", javaParseException, `Encountered "<EOF>" at line 1, column 1.`},
		{"a >", javaParseException, `Encountered "<EOF>"`},
		{"a == 1", javaParseException, `Encountered "="`},
		{"a IS 1", javaParseException, `Encountered "1"`},
		{"(a = 1", javaParseException, `Encountered "<EOF>"`},
		{"a IN (1)", javaParseException, `Encountered "1"`},
		{"a IN ('x',)", javaParseException, `Encountered ")"`},
		{"a > 'x'", javaRuntimeException, "Value ''x'' cannot be compared."},
		{"a > TRUE", javaRuntimeException, "Value 'TRUE' cannot be compared."},
		{"a > 1 > 2", javaRuntimeException, "Value '(a > 1)' cannot be compared."},
		{"a = NULL", javaRuntimeException, "'NULL' cannot be compared."},
		{"TRUE = 1", javaRuntimeException, "'TRUE' cannot be compared with '1'"},
		{"a BETWEEN 10 AND 1", javaRuntimeException, "left value(10) must less than or equal to right value(1)"},
		{"a BETWEEN NULL AND 1", javaRuntimeException, "values can not be null"},
		{"a BETWEEN 'x' AND 'y'", javaRuntimeException, "Value ''x'' cannot be compared."},
		{"1", javaParseException, "Expression will not result in a boolean value: 1"},
		{"'abc'", javaParseException, "Expression will not result in a boolean value: 'abc'"},
		{"-a", javaParseException, "Expression will not result in a boolean value: (- a)"},
		{"a = 1 AND 2", javaParseException, "Expression will not result in a boolean value: 2"},
		{"1 IN ('a')", javaRuntimeException, "Expected a property for In expression, got: 1"},
		{"a > 0.0", javaRuntimeException, "0.0 is less than 4.9E-324"},
		{"a > 1e999", javaRuntimeException, "1e999 is greater than"},
		{"a > 9223372036854775808", javaNumberFormatError, `For input string: "9223372036854775808"`},
		{"a = 1 #", javaTokenMgrError, `Lexical error at line 1, column 7.  Encountered: "#"`},
		{"a = 'x", javaTokenMgrError, "Lexical error at line 1, column 5"},
		{"a = 1 /* open", javaTokenMgrError, `Encountered: "/"`},
		{"a = 1 NOT #", javaTokenMgrError, `Encountered: "#"`},
		{"a.b = 1", javaTokenMgrError, `Encountered: "."`},
	}
	for _, r := range rows {
		_, err := Compile(r.expr)
		var ce *CompileError
		require.ErrorAs(t, err, &ce, r.expr)
		require.Equal(t, r.class, ce.JavaClass, r.expr)
		require.Contains(t, ce.Reason, r.reason, r.expr)
		require.Equal(t, r.class+": "+ce.Reason, err.Error())
	}
	deep := ""
	for range maxDepth + 1 {
		deep += "("
	}
	_, err := Compile(deep + "TRUE")
	require.ErrorContains(t, err, "nests deeper")
}

// TestCompileAccepts: forms Java accepts that look odd; each must compile, or a consumer
// that starts against a Java broker would not start here.
func TestCompileAccepts(t *testing.T) {
	for _, expr := range []string{
		"1 = TRUE",               // only a Boolean literal on the left is checked
		"a NOT BETWEEN 10 AND 1", // no order check for NOT BETWEEN
		"a = 1 -- trailing comment without a line break",
		"a = 1 ) ( garbage '", // the token after the selector lexes; the rest is never read
		"NULL IS NULL",
		"(a) IN ('x')",
		"a BETWEEN 1 AND 10.5",
		"a > 4.9E-324",
		"a = 9223372036854775807",
	} {
		_, err := Compile(expr)
		require.NoError(t, err, expr)
	}
}

func TestPrintRoundTrip(t *testing.T) {
	for expr, printed := range map[string]string{
		"a = 1 AND b <> 'x''y' OR NOT c": "(((a = 1) AND (NOT (b = 'x''y'))) OR (NOT c))",
		"a BETWEEN 1 AND 2.5":            "((a >= 1) AND (a <= 2.5))",
		"a NOT BETWEEN -1 AND 2e20":      "((a < (- 1)) OR (a > 2e+20))",
		"a NOT IN ('x', 'y')":            "(a NOT IN ('x', 'y'))",
		"a IS NOT NULL":                  "(NOT (a IS NULL))",
		"a = 5.0 OR b = 9999999999":      "((a = 5.0) OR (b = 9999999999))",
		"t":                              "t",
	} {
		e, err := Compile(expr)
		require.NoError(t, err, expr)
		require.Equal(t, printed, e.String(), expr)
		again, err := Compile(e.String())
		require.NoError(t, err, printed)
		require.Equal(t, printed, again.String())
	}
}

func TestMatchRecord(t *testing.T) {
	e, err := Compile("color = 'red' AND TAGS = 'TagA'")
	require.NoError(t, err)
	rec := func(p []byte) []byte {
		host := netip.MustParseAddrPort("127.0.0.1:10911")
		m := codec.Message{Topic: "T", Body: []byte("x"), Properties: p, BornHost: host, StoreHost: host}
		b, err := m.AppendRecord(nil)
		require.NoError(t, err)
		return b
	}
	require.True(t, e.MatchRecord(rec(props("color", "red", "TAGS", "TagA"))))
	require.False(t, e.MatchRecord(rec(props("color", "blue", "TAGS", "TagA"))))
	require.False(t, e.MatchRecord([]byte{1, 2, 3}), "a record that does not decode does not match")
	// A property given twice: the last one counts, as in Java's map.
	require.True(t, e.MatchRecord(rec(props("color", "blue", "color", "red", "TAGS", "TagA"))))
}

func TestCache(t *testing.T) {
	c := NewCache()
	e1, err := c.Get("g", "t", "a = 1", 1)
	require.NoError(t, err)
	again, _ := c.Get("g", "t", "a = 1", 1)
	require.Same(t, e1, again, "one compile per version")
	newer, _ := c.Get("g", "t", "a = 1", 2)
	require.Same(t, e1, newer, "a new version of the same text keeps the compiled form")
	changed, err := c.Get("g", "t", "a = 2", 3)
	require.NoError(t, err)
	require.NotSame(t, e1, changed)
	require.True(t, changed.MatchProperties(props("a", "2")))
	_, err = c.Get("g", "t", "a >", 4)
	require.Error(t, err)
	_, err = c.Get("g", "t", "a >", 4)
	require.Error(t, err, "a failed compile is remembered")
	_, err = c.Get("g2", "t", "a = 1", 1)
	require.NoError(t, err)
	require.Equal(t, 2, c.Len())
}
