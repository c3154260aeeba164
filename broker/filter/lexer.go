package filter

import (
	"strconv"
	"strings"
)

// tokenKind is a lexical token of the selector grammar.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokError
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokDecimal
	tokFloat
	tokString
	tokID
	tokEq     // =
	tokNe     // <>
	tokGt     // >
	tokGe     // >=
	tokLt     // <
	tokLe     // <=
	tokLParen // (
	tokRParen // )
	tokComma  // ,
	tokPlus   // +
	tokMinus  // -
)

var keywords = [...]struct {
	word string
	kind tokenKind
}{
	{"NOT", tokNot}, {"AND", tokAnd}, {"OR", tokOr}, {"BETWEEN", tokBetween}, {"IN", tokIn},
	{"TRUE", tokTrue}, {"FALSE", tokFalse}, {"NULL", tokNull}, {"IS", tokIs},
}

// token is one lexed token. text is its image (for a string, the decoded value); pos its
// byte offset in the expression.
type token struct {
	kind tokenKind
	text string
	pos  int
}

// lexer cuts an expression into tokens on demand: like JavaCC's token manager it lexes a
// token only when the parser looks at it.
type lexer struct {
	src string
	pos int
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || c >= '0' && c <= '9' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next lexes the token at the current position. A lexical error is a tokError token whose
// text is the message.
func (l *lexer) next() token {
	l.skipSpaceAndComments()
	s, start := l.src, l.pos
	if start >= len(s) {
		return token{kind: tokEOF, pos: start}
	}
	c := s[start]
	switch {
	case isIDStart(c):
		end := start + 1
		for end < len(s) && isIDPart(s[end]) {
			end++
		}
		l.pos = end
		word := s[start:end]
		for _, k := range keywords {
			if strings.EqualFold(word, k.word) {
				return token{kind: k.kind, text: word, pos: start}
			}
		}
		return token{kind: tokID, text: word, pos: start}
	case isDigit(c) || c == '.' && start+1 < len(s) && isDigit(s[start+1]):
		return l.number()
	case c == '\'':
		return l.str()
	}
	l.pos = start + 1
	kind := tokError
	switch c {
	case '=':
		kind = tokEq
	case '>':
		kind = tokGt
		if start+1 < len(s) && s[start+1] == '=' {
			kind, l.pos = tokGe, start+2
		}
	case '<':
		kind = tokLt
		if start+1 < len(s) && s[start+1] == '=' {
			kind, l.pos = tokLe, start+2
		} else if start+1 < len(s) && s[start+1] == '>' {
			kind, l.pos = tokNe, start+2
		}
	case '(':
		kind = tokLParen
	case ')':
		kind = tokRParen
	case ',':
		kind = tokComma
	case '+':
		kind = tokPlus
	case '-':
		kind = tokMinus
	}
	if kind == tokError {
		return token{kind: tokError, pos: start, text: "Lexical error at " + position(s, start) +
			".  Encountered: " + strconv.Quote(s[start:start+1])}
	}
	return token{kind: kind, text: s[start:l.pos], pos: start}
}

// skipSpaceAndComments skips white space (" \t\n\r\f"), "--" comments ended by a line
// break and "/* */" comments. A "--" without a line break after it is no comment (it is
// two minus signs), as in the JavaCC grammar; an unterminated "/*" is left for next to
// refuse.
func (l *lexer) skipSpaceAndComments() {
	s := l.src
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case c == '-' && strings.HasPrefix(s[l.pos:], "--"):
			i := strings.IndexAny(s[l.pos+2:], "\r\n")
			if i < 0 {
				return
			}
			l.pos += 2 + i + 1
		case c == '/' && strings.HasPrefix(s[l.pos:], "/*"):
			i := strings.Index(s[l.pos+2:], "*/")
			if i < 0 {
				return
			}
			l.pos += 2 + i + 2
		default:
			return
		}
	}
}

// number lexes DECIMAL_LITERAL or FLOATING_POINT_LITERAL, whichever is longer (JavaCC
// takes the longest match): "0" | [1-9][0-9]*[lL]? against
// [0-9]+ "." [0-9]* exp? | "." [0-9]+ exp? | [0-9]+ exp, exp = [eE][+-]?[0-9]+.
func (l *lexer) number() token {
	s, start := l.src, l.pos
	i := start
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intEnd := i
	float := false
	if i < len(s) && s[i] == '.' {
		float = true
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if e := exponentEnd(s, i); e > i {
		float, i = true, e
	}
	if float {
		l.pos = i
		return token{kind: tokFloat, text: s[start:i], pos: start}
	}
	if s[start] == '0' {
		l.pos = start + 1
		return token{kind: tokDecimal, text: "0", pos: start}
	}
	i = intEnd
	if i < len(s) && (s[i] == 'l' || s[i] == 'L') {
		i++
	}
	l.pos = i
	return token{kind: tokDecimal, text: s[start:i], pos: start}
}

// exponentEnd returns the end of an exponent starting at i, or i when there is none.
func exponentEnd(s string, i int) int {
	if i >= len(s) || s[i] != 'e' && s[i] != 'E' {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	k := j
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == j {
		return i
	}
	return k
}

// str lexes a quoted string; ” inside is one quote.
func (l *lexer) str() token {
	s, start := l.src, l.pos
	var b strings.Builder
	for i := start + 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		l.pos = i + 1
		return token{kind: tokString, text: b.String(), pos: start}
	}
	l.pos = len(s)
	return token{kind: tokError, pos: start, text: "Lexical error at " + position(s, start) +
		".  Encountered: <EOF> in a string literal"}
}

// position is JavaCC's "line L, column C" of a byte offset (columns count bytes).
func position(s string, off int) string {
	line, col := 1, 1
	for i := 0; i < off && i < len(s); i++ {
		if s[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col)
}
