package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// table prints rows aligned in columns, two spaces apart, the way RocketMQ's printf widths
// line them up (but as wide as the widest cell, so nothing is cut or run together).
type table struct {
	w   io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	if len(header) > 0 {
		t.row(toAny(header)...)
	}
	return t
}

// row adds one line; each cell is formatted with %v.
func (t *table) row(cells ...any) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte('\t')
		}
		fmt.Fprint(&b, c)
	}
	b.WriteByte('\n')
	_, _ = t.tw.Write([]byte(b.String())) // errors surface in flush
}

// flush writes the table, without the padding that empty last cells leave at line ends.
func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	for i, l := range lines {
		if trimmed := strings.TrimRight(l, " \n"); trimmed != strings.TrimSuffix(l, "\n") {
			lines[i] = trimmed + "\n"
		}
	}
	_, err := io.WriteString(t.w, strings.Join(lines, ""))
	return err
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// errWriter remembers the first write error, so that a text renderer can print line after
// line and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// boolArg is a boolean flag that takes its value as a separate argument ("-o true"), as
// RocketMQ's commons-cli options with hasArg do; cobra's own bool flags would take "true"
// as a stray positional argument.
type boolArg struct {
	value bool
	set   bool
}

func (b *boolArg) String() string { return strconv.FormatBool(b.value) }

func (b *boolArg) Set(s string) error {
	v, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	b.value, b.set = v, true
	return nil
}

func (b *boolArg) Type() string { return "true|false" }
