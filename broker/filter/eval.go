package filter

import (
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ringmq/ringmq/codec"
)

// kind is the Java class of a value: null, Boolean, Integer, Long, Double or String (the
// only ones a selector can produce: literals, properties and negation).
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt
	kindLong
	kindDouble
	kindString
)

// value is one evaluated operand, held by value (no interface, no allocation). A
// property's string is a view of the record's bytes (propertyString): it lives only while
// the expression is evaluated.
type value struct {
	kind kind
	b    bool
	num  int64 // Integer, Long
	dbl  float64
	str  string
}

func (v value) isNumber() bool {
	return v.kind == kindInt || v.kind == kindLong || v.kind == kindDouble
}

// javaString is the value as Java's toString prints it (for compile error messages).
func (v value) javaString() string {
	switch v.kind {
	case kindNull:
		return "null"
	case kindBool:
		return strconv.FormatBool(v.b)
	case kindInt, kindLong:
		return strconv.FormatInt(v.num, 10)
	case kindDouble:
		return strconv.FormatFloat(v.dbl, 'g', -1, 64)
	}
	return v.str
}

// evalStatus is an evaluation's outcome besides its value: Java throws (a failed number
// conversion, a ClassCastException), which aborts the whole expression.
type evalStatus uint8

const (
	evalOK evalStatus = iota
	evalError
)

type opcode uint8

const (
	opConst opcode = iota
	opProperty
	opAnd
	opOr
	opNot
	opBoolCast // a property used as a condition
	opNegate
	opEq
	opIsNull
	opGt
	opGe
	opLt
	opLe
	opIn
	opNotIn
)

// node is one expression node. left is the only operand of a unary node.
type node struct {
	op          opcode
	left, right *node
	val         value    // opConst
	name        string   // opProperty
	list        []string // opIn, opNotIn
}

func constNode(v value) *node { return &node{op: opConst, val: v} }

// isBoolean reports whether Java's node class implements BooleanExpression.
func (n *node) isBoolean() bool {
	switch n.op {
	case opConst:
		return n.val.kind == kindBool || n.val.kind == kindNull // BooleanConstantExpression
	case opProperty, opNegate:
		return false
	}
	return true
}

// MatchRecord reports whether a stored CommitLog record's properties satisfy the
// expression (ExpressionMessageFilter.isMatchedByCommitLog). A record that does not decode
// does not match. It does not allocate.
func (e *Expression) MatchRecord(record []byte) bool {
	rec, err := codec.DecodeRecord(record, false)
	if err != nil {
		return false
	}
	return e.MatchProperties(rec.Properties)
}

// MatchProperties reports whether encoded properties (name U+0001 value U+0002 ...)
// satisfy the expression: TRUE matches; FALSE, NULL and an evaluation error do not. It
// does not allocate.
func (e *Expression) MatchProperties(props []byte) bool {
	v, st := eval(e.root, props)
	return st == evalOK && v.kind == kindBool && v.b
}

var (
	valNull  = value{kind: kindNull}
	valTrue  = value{kind: kindBool, b: true}
	valFalse = value{kind: kindBool}
)

func boolValue(b bool) value {
	if b {
		return valTrue
	}
	return valFalse
}

// eval evaluates n as the Java expression classes do.
func eval(n *node, props []byte) (value, evalStatus) {
	switch n.op {
	case opConst:
		return n.val, evalOK
	case opProperty:
		raw, ok := codec.LookupProperty(props, n.name)
		if !ok {
			return valNull, evalOK
		}
		return value{kind: kindString, str: propertyString(raw)}, evalOK
	case opAnd, opOr:
		return evalLogic(n, props)
	case opNot:
		v, st := eval(n.left, props)
		if st != evalOK || v.kind == kindNull {
			return valNull, st
		}
		if v.kind != kindBool {
			return valNull, evalError // (Boolean) cast
		}
		return boolValue(!v.b), evalOK
	case opBoolCast:
		v, st := eval(n.left, props)
		if st != evalOK || v.kind == kindNull {
			return valNull, st
		}
		return boolValue(v.kind == kindBool && v.b), evalOK
	case opNegate:
		v, st := eval(n.left, props)
		if st != evalOK {
			return valNull, st
		}
		switch v.kind {
		case kindInt:
			return value{kind: kindInt, num: int64(-int32(v.num))}, evalOK
		case kindLong:
			return value{kind: kindLong, num: -v.num}, evalOK
		case kindDouble:
			return value{kind: kindDouble, dbl: -v.dbl}, evalOK
		}
		return valNull, evalOK // not a Number
	case opEq:
		return evalEqual(n, props)
	case opIsNull:
		v, st := eval(n.left, props)
		if st != evalOK {
			return valNull, st
		}
		return boolValue(v.kind == kindNull), evalOK
	case opGt, opGe, opLt, opLe:
		return evalOrder(n, props)
	case opIn, opNotIn:
		v, st := eval(n.left, props)
		if st != evalOK || v.kind != kindString {
			return valNull, st
		}
		found := false
		for i := range n.list {
			if v.str == n.list[i] {
				found = true
				break
			}
		}
		return boolValue(found != (n.op == opNotIn)), evalOK
	}
	return valNull, evalError
}

// evalLogic is LogicExpression's AND / OR: three-valued, the right side evaluated only
// when the left does not decide.
func evalLogic(n *node, props []byte) (value, evalStatus) {
	decisive := n.op == opOr // OR stops at TRUE, AND at FALSE
	l, st := eval(n.left, props)
	if st != evalOK {
		return valNull, st
	}
	if l.kind == kindBool && l.b == decisive {
		return boolValue(decisive), evalOK
	}
	r, st := eval(n.right, props)
	if st != evalOK {
		return valNull, st
	}
	if r.kind == kindBool && r.b == decisive {
		return boolValue(decisive), evalOK
	}
	if l.kind == kindNull || r.kind == kindNull {
		return valNull, evalOK
	}
	return boolValue(!decisive), evalOK
}

// evalEqual is the '=' of ComparisonExpression.doCreateEqual: NULL against a value is NULL
// when the left is NULL and FALSE when only the right is; two NULLs are equal (IS NULL);
// equal values of one class are TRUE; otherwise __compare converts and compares.
func evalEqual(n *node, props []byte) (value, evalStatus) {
	l, st := eval(n.left, props)
	if st != evalOK {
		return valNull, st
	}
	r, st := eval(n.right, props)
	if st != evalOK {
		return valNull, st
	}
	if (l.kind == kindNull) != (r.kind == kindNull) {
		if l.kind == kindNull {
			return valNull, evalOK
		}
		return valFalse, evalOK
	}
	if l.kind == kindNull {
		return valTrue, evalOK
	}
	if l.kind == r.kind && sameValue(&l, &r) {
		return valTrue, evalOK
	}
	c, st := compareValues(l, r)
	if st != evalOK {
		return valNull, st
	}
	return boolValue(c == 0), evalOK
}

// sameValue is Java's equals for two values of one class.
func sameValue(l, r *value) bool {
	switch l.kind {
	case kindBool:
		return l.b == r.b
	case kindInt, kindLong:
		return l.num == r.num
	case kindDouble:
		return javaDoubleBits(l.dbl) == javaDoubleBits(r.dbl)
	case kindString:
		return l.str == r.str
	}
	return true
}

// evalOrder is ComparisonExpression.evaluate for >, >=, <, <=: NULL on either side is
// NULL; two strings (two properties) are both read as doubles, and fail when either is
// not one; else __compare.
func evalOrder(n *node, props []byte) (value, evalStatus) {
	l, st := eval(n.left, props)
	if st != evalOK || l.kind == kindNull {
		return valNull, st
	}
	r, st := eval(n.right, props)
	if st != evalOK || r.kind == kindNull {
		return valNull, st
	}
	var c int
	if l.kind == kindString && r.kind == kindString {
		lf, ok1 := javaParseDouble(l.str)
		rf, ok2 := javaParseDouble(r.str)
		if !ok1 || !ok2 {
			return valNull, evalError
		}
		c = javaDoubleCompare(lf, rf)
	} else {
		c, st = compareValues(l, r)
		if st != evalOK {
			return valNull, st
		}
	}
	switch n.op {
	case opGt:
		return boolValue(c > 0), evalOK
	case opGe:
		return boolValue(c >= 0), evalOK
	case opLt:
		return boolValue(c < 0), evalOK
	}
	return boolValue(c <= 0), evalOK
}

// compareValues is ComparisonExpression.__compare with convertStringExpressions on (as
// SelectorParser always sets it): values of different classes are converted up (Integer
// → Long → Double; a String to the other side's class with Integer.valueOf, Long.valueOf,
// Double.valueOf or Boolean.valueOf, or the other side's String to a number), a pair that
// does not convert compares as -1; a conversion that fails, and a Boolean against a
// String, are evaluation errors (NumberFormatException, ClassCastException).
func compareValues(l, r value) (int, evalStatus) {
	if l.kind != r.kind {
		switch l.kind {
		case kindBool:
			if r.kind == kindString {
				return 0, evalError // (String) lv: ClassCastException
			}
			return -1, evalOK
		case kindInt, kindLong:
			// Integer against Long widens the Integer; both are held as int64 already.
			switch r.kind {
			case kindInt, kindLong:
				l.kind, r.kind = kindLong, kindLong
			case kindDouble:
				l = value{kind: kindDouble, dbl: float64(l.num)}
			case kindString: // Integer.valueOf or Long.valueOf, as the left side's class
				v, ok := javaParseInt(r.str, intBits(l.kind))
				if !ok {
					return 0, evalError
				}
				r = value{kind: l.kind, num: v}
			default:
				return -1, evalOK
			}
		case kindDouble:
			switch r.kind {
			case kindInt, kindLong:
				r = value{kind: kindDouble, dbl: float64(r.num)}
			case kindString:
				f, ok := javaParseDouble(r.str)
				if !ok {
					return 0, evalError
				}
				r = value{kind: kindDouble, dbl: f}
			default:
				return -1, evalOK
			}
		case kindString:
			s := l.str
			switch r.kind {
			case kindBool:
				l = value{kind: kindBool, b: strings.EqualFold(s, "true")}
			case kindInt, kindLong:
				v, ok := javaParseInt(s, intBits(r.kind))
				if !ok {
					return 0, evalError
				}
				l = value{kind: r.kind, num: v}
			case kindDouble:
				f, ok := javaParseDouble(s)
				if !ok {
					return 0, evalError
				}
				l = value{kind: kindDouble, dbl: f}
			default:
				return -1, evalOK
			}
		default:
			return -1, evalOK
		}
	}
	switch l.kind {
	case kindBool:
		switch {
		case l.b == r.b:
			return 0, evalOK
		case l.b:
			return 1, evalOK
		}
		return -1, evalOK
	case kindInt, kindLong:
		switch {
		case l.num < r.num:
			return -1, evalOK
		case l.num > r.num:
			return 1, evalOK
		}
		return 0, evalOK
	case kindDouble:
		return javaDoubleCompare(l.dbl, r.dbl), evalOK
	case kindString:
		// Reached only from '=' with unequal strings; the order does not matter there.
		if l.str == r.str {
			return 0, evalOK
		}
		return 1, evalOK
	}
	return 0, evalOK
}

// intBits is the width of an Integer (32) or a Long (64).
func intBits(k kind) int {
	if k == kindInt {
		return 32
	}
	return 64
}

// javaDoubleBits is Double.doubleToLongBits: every NaN is one NaN.
func javaDoubleBits(f float64) uint64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// javaDoubleCompare is Double.compare: -0.0 < 0.0, NaN equals NaN and is above +Inf.
func javaDoubleCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(javaDoubleBits(a)), int64(javaDoubleBits(b))
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

// propertyString views a property value's bytes as a string without copying. The bytes
// are the stored record's (mapped CommitLog memory, or the arrival notice's copy), which
// do not change while the pull holds them; the string never outlives the evaluation.
func propertyString(raw []byte) string { return unsafe.String(unsafe.SliceData(raw), len(raw)) }
