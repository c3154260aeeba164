package filter

import (
	"math"
	"strconv"
)

// maxDepth bounds the nesting of an expression (parentheses, NOT, signs): Java's parser
// fails with a StackOverflowError on deep nesting; here the limit is explicit.
const maxDepth = 200

// Java exception classes as RocketMQ's broker names them in a CHECK_CLIENT_CONFIG remark
// (MQFilterException's message is its cause's toString()).
const (
	javaParseException    = "org.apache.rocketmq.filter.parser.ParseException"
	javaTokenMgrError     = "org.apache.rocketmq.filter.parser.TokenMgrError"
	javaRuntimeException  = "java.lang.RuntimeException"
	javaNumberFormatError = "java.lang.NumberFormatException"
)

// CompileError is an expression that does not compile. Error() is the Java-shaped text
// RocketMQ's broker answers CHECK_CLIENT_CONFIG with: the exception class, ": ", the reason.
type CompileError struct {
	JavaClass string // e.g. org.apache.rocketmq.filter.parser.ParseException
	Reason    string
}

func (e *CompileError) Error() string { return e.JavaClass + ": " + e.Reason }

// Expression is a compiled SQL92 selector. It is immutable and safe for concurrent use.
type Expression struct {
	root *node
	src  string
}

// Source is the text the expression was compiled from.
func (e *Expression) Source() string { return e.src }

// String prints the expression fully parenthesized; compiling the printed text gives an
// expression that prints the same.
func (e *Expression) String() string { return string(e.root.appendTo(nil)) }

// Compile parses an SQL92 selector with RocketMQ's grammar and compile-time checks
// (SelectorParser.parse). Errors are *CompileError.
func Compile(expr string) (*Expression, error) {
	p := parser{lex: lexer{src: expr}}
	p.tok = p.lex.next()
	n := p.or()
	if p.err == nil {
		n = p.asBoolean(n)
	}
	if p.err == nil && p.tok.kind == tokError { // the token after the selector must lex
		p.err = &CompileError{JavaClass: javaTokenMgrError, Reason: p.tok.text}
	}
	if p.err != nil {
		return nil, p.err
	}
	return &Expression{root: n, src: expr}, nil
}

// parser is a recursive-descent parser with one token of look-ahead (two after NOT in a
// comparison, as the JavaCC grammar's LOOKAHEAD(2)). The first error stops it.
type parser struct {
	lex    lexer
	tok    token
	peeked *token // the token after tok, when looked at
	err    error
	depth  int
}

func (p *parser) advance() {
	if p.peeked != nil {
		p.tok, p.peeked = *p.peeked, nil
		return
	}
	p.tok = p.lex.next()
}

// peek is the token after the current one.
func (p *parser) peek() token {
	if p.peeked == nil {
		t := p.lex.next()
		p.peeked = &t
	}
	return *p.peeked
}

func (p *parser) fail(class, reason string) *node {
	if p.err == nil {
		p.err = &CompileError{JavaClass: class, Reason: reason}
	}
	return nil
}

// unexpected fails at the current token.
func (p *parser) unexpected() *node {
	if p.tok.kind == tokError {
		return p.fail(javaTokenMgrError, p.tok.text)
	}
	image := p.tok.text
	if p.tok.kind == tokEOF {
		image = "<EOF>"
	} else if p.tok.kind == tokString {
		image = quote(p.tok.text)
	}
	return p.fail(javaParseException, "Encountered \""+image+"\" at "+position(p.lex.src, p.tok.pos)+".")
}

func (p *parser) expect(k tokenKind) bool {
	if p.err != nil {
		return false
	}
	if p.tok.kind != k {
		p.unexpected()
		return false
	}
	p.advance()
	return true
}

// asBoolean is SelectorParser.asBooleanExpression: a boolean expression as it is, a
// property cast to boolean, anything else refused.
func (p *parser) asBoolean(n *node) *node {
	if n == nil || p.err != nil {
		return nil
	}
	if n.isBoolean() {
		return n
	}
	if n.op == opProperty {
		return &node{op: opBoolCast, left: n}
	}
	return p.fail(javaParseException, "Expression will not result in a boolean value: "+n.String())
}

func (p *parser) or() *node {
	left := p.and()
	for p.err == nil && p.tok.kind == tokOr {
		p.advance()
		right := p.and()
		left = p.logic(opOr, left, right)
	}
	return left
}

func (p *parser) and() *node {
	left := p.equality()
	for p.err == nil && p.tok.kind == tokAnd {
		p.advance()
		right := p.equality()
		left = p.logic(opAnd, left, right)
	}
	return left
}

func (p *parser) logic(op opcode, left, right *node) *node {
	l, r := p.asBoolean(left), p.asBoolean(right)
	if p.err != nil {
		return nil
	}
	return &node{op: op, left: l, right: r}
}

func (p *parser) equality() *node {
	left := p.comparison()
	for p.err == nil {
		switch p.tok.kind {
		case tokEq:
			p.advance()
			left = p.equal(left, p.comparison())
		case tokNe:
			p.advance()
			if eq := p.equal(left, p.comparison()); eq != nil {
				left = &node{op: opNot, left: eq}
			}
		case tokIs:
			p.advance()
			not := false
			if p.tok.kind == tokNot {
				not = true
				p.advance()
			}
			if !p.expect(tokNull) {
				return nil
			}
			left = &node{op: opIsNull, left: left}
			if not {
				left = &node{op: opNot, left: left}
			}
		default:
			return left
		}
	}
	return nil
}

// equal is ComparisonExpression.createEqual with its operand checks.
func (p *parser) equal(left, right *node) *node {
	if p.err != nil {
		return nil
	}
	for _, n := range [2]*node{left, right} {
		if n.op == opConst && n.val.kind == kindNull {
			return p.fail(javaRuntimeException, "'"+n.String()+"' cannot be compared.")
		}
	}
	if left.op == opConst && right.op == opConst && left.val.kind == kindBool && right.val.kind != kindBool {
		return p.fail(javaRuntimeException, "'"+left.String()+"' cannot be compared with '"+right.String()+"'")
	}
	return &node{op: opEq, left: left, right: right}
}

func (p *parser) comparison() *node {
	left := p.unary()
	for p.err == nil {
		switch k := p.tok.kind; k {
		case tokGt, tokGe, tokLt, tokLe:
			p.advance()
			left = p.order(orderOp(k), left, p.unary())
		case tokBetween:
			p.advance()
			left = p.between(left, false)
		case tokIn:
			p.advance()
			left = p.in(left, false)
		case tokNot:
			switch p.peek().kind {
			case tokBetween:
				p.advance()
				p.advance()
				left = p.between(left, true)
			case tokIn:
				p.advance()
				p.advance()
				left = p.in(left, true)
			case tokError:
				p.advance()
				return p.unexpected()
			default:
				return left
			}
		default:
			return left
		}
	}
	return nil
}

func orderOp(k tokenKind) opcode {
	switch k {
	case tokGt:
		return opGt
	case tokGe:
		return opGe
	case tokLt:
		return opLt
	}
	return opLe
}

// order is createGreaterThan and its kin: checkLessThanOperand on both sides (a literal
// must be a number; a boolean expression is refused).
func (p *parser) order(op opcode, left, right *node) *node {
	if p.err != nil {
		return nil
	}
	for _, n := range [2]*node{left, right} {
		if n.op == opConst && !n.val.isNumber() || n.op != opConst && n.isBoolean() {
			return p.fail(javaRuntimeException, "Value '"+n.String()+"' cannot be compared.")
		}
	}
	return &node{op: op, left: left, right: right}
}

// between is createBetween (value >= low AND value <= high, after checking that two
// literal bounds are in order) or createNotBetween (value < low OR value > high, no
// order check).
func (p *parser) between(value *node, not bool) *node {
	low := p.unary()
	if !p.expect(tokAnd) {
		return nil
	}
	high := p.unary()
	if p.err != nil {
		return nil
	}
	if not {
		lt, gt := p.order(opLt, value, low), p.order(opGt, value, high)
		if p.err != nil {
			return nil
		}
		return &node{op: opOr, left: lt, right: gt}
	}
	if low.op == opConst && high.op == opConst {
		if low.val.kind == kindNull || high.val.kind == kindNull {
			return p.fail(javaRuntimeException, "Illegal values of between, values can not be null!")
		}
		c, err := compareValues(high.val, low.val)
		if err != evalOK {
			return p.fail(javaRuntimeException, "Illegal values of between, "+low.String()+" and "+high.String()+
				" cannot be compared")
		}
		if c < 0 {
			return p.fail(javaRuntimeException, "Illegal values of between, left value("+low.val.javaString()+
				") must less than or equal to right value("+high.val.javaString()+")")
		}
	}
	ge, le := p.order(opGe, value, low), p.order(opLe, value, high)
	if p.err != nil {
		return nil
	}
	return &node{op: opAnd, left: ge, right: le}
}

// in is createInFilter / createNotInFilter: a property, then ( 'a', 'b', ... ).
func (p *parser) in(left *node, not bool) *node {
	if !p.expect(tokLParen) {
		return nil
	}
	var list []string
	for {
		if p.tok.kind != tokString {
			return p.unexpected()
		}
		list = append(list, p.tok.text)
		p.advance()
		if p.tok.kind != tokComma {
			break
		}
		p.advance()
	}
	if !p.expect(tokRParen) {
		return nil
	}
	if left.op != opProperty {
		return p.fail(javaRuntimeException, "Expected a property for In expression, got: "+left.String())
	}
	op := opIn
	if not {
		op = opNotIn
	}
	return &node{op: op, left: left, list: list}
}

func (p *parser) unary() *node {
	if p.depth++; p.depth > maxDepth {
		return p.fail(javaParseException, "expression nests deeper than "+strconv.Itoa(maxDepth)+" levels")
	}
	defer func() { p.depth-- }()
	switch p.tok.kind {
	case tokPlus:
		p.advance()
		return p.unary()
	case tokMinus:
		p.advance()
		n := p.unary()
		if p.err != nil {
			return nil
		}
		return &node{op: opNegate, left: n}
	case tokNot:
		p.advance()
		n := p.asBoolean(p.unary())
		if p.err != nil {
			return nil
		}
		return &node{op: opNot, left: n}
	}
	return p.primary()
}

func (p *parser) primary() *node {
	t := p.tok
	switch t.kind {
	case tokString:
		p.advance()
		return constNode(value{kind: kindString, str: t.text})
	case tokDecimal:
		p.advance()
		return p.decimal(t.text)
	case tokFloat:
		p.advance()
		return p.float(t.text)
	case tokTrue, tokFalse:
		p.advance()
		return constNode(value{kind: kindBool, b: t.kind == tokTrue})
	case tokNull:
		p.advance()
		return constNode(value{kind: kindNull})
	case tokID:
		p.advance()
		return &node{op: opProperty, name: t.text}
	case tokLParen:
		p.advance()
		n := p.or()
		if !p.expect(tokRParen) {
			return nil
		}
		return n
	}
	return p.unexpected()
}

// decimal is ConstantExpression.createFromDecimal: a Long (new Long(text), so past
// Long.MAX_VALUE is an error), narrowed to an Integer when it fits.
func (p *parser) decimal(text string) *node {
	digits := text
	if n := len(digits); digits[n-1] == 'l' || digits[n-1] == 'L' {
		digits = digits[:n-1]
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return p.fail(javaNumberFormatError, "For input string: \""+digits+"\"")
	}
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		return constNode(value{kind: kindInt, num: v})
	}
	return constNode(value{kind: kindLong, num: v})
}

// float is ConstantExpression.createFloat: refused when it overflows to infinity, and when
// it is below Double.MIN_VALUE (the smallest positive double): a literal has no sign, so
// that refuses 0.0 and underflows.
func (p *parser) float(text string) *node {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeError(err) {
		return p.fail(javaNumberFormatError, "For input string: \""+text+"\"")
	}
	if f > math.MaxFloat64 {
		return p.fail(javaRuntimeException, text+" is greater than 1.7976931348623157E308")
	}
	if f < math.SmallestNonzeroFloat64 {
		return p.fail(javaRuntimeException, text+" is less than 4.9E-324")
	}
	return constNode(value{kind: kindDouble, dbl: f})
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
