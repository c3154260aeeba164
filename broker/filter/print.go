package filter

import (
	"strconv"
	"strings"
)

// The printer: every binary and unary node in parentheses, literals as the grammar reads
// them, so that Compile(e.String()) gives back an expression that prints the same (the
// fuzz target checks it). Java's toString is close but not re-parsable ("==", "&&").

func (n *node) String() string { return string(n.appendTo(nil)) }

var opText = [...]string{
	opAnd: " AND ", opOr: " OR ", opEq: " = ", opGt: " > ", opGe: " >= ", opLt: " < ", opLe: " <= ",
}

func (n *node) appendTo(b []byte) []byte {
	switch n.op {
	case opConst:
		return n.val.appendLiteral(b)
	case opProperty:
		return append(b, n.name...)
	case opBoolCast:
		return n.left.appendTo(b)
	case opNot:
		b = append(b, "(NOT "...)
		return append(n.left.appendTo(b), ')')
	case opNegate:
		b = append(b, "(- "...)
		return append(n.left.appendTo(b), ')')
	case opIsNull:
		b = append(b, '(')
		return append(n.left.appendTo(b), " IS NULL)"...)
	case opIn, opNotIn:
		b = append(b, '(')
		b = n.left.appendTo(b)
		if n.op == opNotIn {
			b = append(b, " NOT"...)
		}
		b = append(b, " IN ("...)
		for i, s := range n.list {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendQuoted(b, s)
		}
		return append(b, "))"...)
	}
	b = append(b, '(')
	b = n.left.appendTo(b)
	b = append(b, opText[n.op]...)
	b = n.right.appendTo(b)
	return append(b, ')')
}

// appendLiteral writes a literal so that it lexes back to the same value: a Double always
// with a point or an exponent (else it would read as a decimal).
func (v value) appendLiteral(b []byte) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "NULL"...)
	case kindBool:
		if v.b {
			return append(b, "TRUE"...)
		}
		return append(b, "FALSE"...)
	case kindInt, kindLong:
		return strconv.AppendInt(b, v.num, 10)
	case kindDouble:
		start := len(b)
		b = strconv.AppendFloat(b, v.dbl, 'g', -1, 64)
		if !strings.ContainsAny(string(b[start:]), ".e") {
			b = append(b, ".0"...)
		}
		return b
	}
	return appendQuoted(b, v.str)
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '\'')
	b = append(b, strings.ReplaceAll(s, "'", "''")...)
	return append(b, '\'')
}

// quote is a string literal as the grammar writes it.
func quote(s string) string { return string(appendQuoted(nil, s)) }
