// Package filter is RocketMQ 4.x's SQL92 message filter: the expression language of
// MessageSelector.bySql (Java) and consumer.MessageSelector{Type: SQL92} (Go), compiled
// once per subscription and evaluated against a stored message's properties when a pull
// reads it (RocketMQ's filter module: SelectorParser.jj and the expression classes, and
// the broker's ExpressionMessageFilter).
//
// The parser is written by hand (recursive descent): the dialect is RocketMQ's cut-down
// copy of ActiveMQ's JMS selector grammar with its own type rules, and no Go library
// implements it.
//
// # Grammar (RocketMQ 4.9.8)
//
//	selector    = or                                  (tokens after it are ignored, see below)
//	or          = and { OR and }
//	and         = equality { AND equality }
//	equality    = comparison { "=" comparison | "<>" comparison | IS NULL | IS NOT NULL }
//	comparison  = unary { ">" unary | ">=" unary | "<" unary | "<=" unary
//	                    | [NOT] BETWEEN unary AND unary | [NOT] IN "(" string { "," string } ")" }
//	unary       = "+" unary | "-" unary | NOT unary | primary
//	primary     = literal | identifier | "(" or ")"
//	literal     = string | decimal | float | TRUE | FALSE | NULL
//
// Keywords (NOT AND OR BETWEEN IN TRUE FALSE NULL IS) are case-insensitive; identifiers
// ([A-Za-z_$][A-Za-z0-9_$]*) name message properties, case-sensitively; strings are in
// single quotes with ” for a quote; decimals are "0" or [1-9][0-9]* with an optional L,
// an Integer when they fit in 32 bits, else a Long; floats are Doubles (5.5, 5., .5, 5e3;
// 0.0 and values past Double.MAX_VALUE are refused, as Java's createFloat refuses them).
// "--" comments run to the end of a line, "/* */" comments nest nothing.
//
// Like the JavaCC parser, which has no <EOF> at the end of its start rule, the selector
// ends where the grammar can no longer continue: the one token after it must lex, the
// rest is never read ("a = 1 b" is "a = 1"). An expression Java accepts must compile here,
// or a consumer that works against a Java broker would fail to start.
//
// # Semantics
//
// Every property value is a string (as Java's MessageEvaluationContext returns them);
// TAGS, KEYS and the other system properties are visible by name. A missing property is
// NULL. Evaluation follows the Java classes exactly, including their surprises; the
// table in eval_test.go lists them row by row. In short:
//
//   - a comparison with NULL on either side is NULL, and a message matches only when the
//     whole expression is TRUE: "a <> 'x'" does not match a message without a;
//   - '=' is true for equal values of one type; across types the right side is converted
//     to the left's (or the left to the right's) as ComparisonExpression.__compare does: a
//     property compared with 10 is read with Integer.valueOf, with 10.5 with Double.valueOf,
//     with TRUE with Boolean.valueOf; a property that does not convert is an evaluation
//     error;
//   - '>', '>=', '<', '<=' and BETWEEN take numbers (a literal string, TRUE or a comparison
//     there is refused when compiling); two properties are both read as doubles;
//   - IN and NOT IN take a property on the left and string literals in the list;
//   - a property used as a condition ("a AND b", "NOT a") is FALSE (it is a string, not a
//     Boolean) or NULL when missing;
//   - an evaluation error (a conversion that fails) makes the whole expression not match,
//     as Java's filter catches the exception and answers false.
//
// Compile errors carry Java-shaped messages: the exception class RocketMQ's broker puts
// in its remark (org.apache.rocketmq.filter.parser.ParseException, java.lang.RuntimeException,
// ...) then the reason.
//
// # Cost
//
// A compiled Expression is immutable and safe for concurrent use. MatchRecord and
// MatchProperties read the properties straight from the stored record's bytes (no map,
// no copy) and do not allocate.
package filter
