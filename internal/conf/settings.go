package conf

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Settings structs: the fields a properties file sets, described by tags on the fields, so
// that a key's name, default, unit, meaning and allowed values are written once, next to
// the field, and the reader of the file, -p and --help all come from them.
//
//	prop:"mappedFileSizeCommitLog"   the key (RocketMQ's property name; also the --flag)
//	default:"1073741824"             the default, as the file writes it (absent: the zero value)
//	unit:"ms"                        a time.Duration's unit in the file: ms, s or h (absent: ms)
//	help:"bytes per CommitLog file"  one line on what the key does, for --help
//	allowed:"1..1024"                the values Validate accepts, when narrower than the type's
//	                                 (--help shows it; errors quote it)
//	group:"store"                    the --help section the key is listed in
//
// A field with a default tag and no prop tag is a setting that no file sets; SetDefaults
// still gives it its default. The fields of an embedded (anonymous) struct without a prop tag
// are the outer struct's, in the place of the embedding: the broker's Config embeds the
// store's, so one key sets the store's field directly.
//
// Field types: string, bool, signed integers, time.Duration, and any type whose pointer
// implements encoding.TextUnmarshaler (enums, netip.AddrPort), printed with MarshalText
// (else String). An enum lists its spellings with an EnumValues method; --help shows them.

// Enum is implemented by setting types with a fixed set of spellings (their UnmarshalText
// accepts exactly these; ParseEnum builds its error).
type Enum interface {
	EnumValues() []string
}

// Key is one key of a settings struct.
type Key struct {
	Name    string   // prop tag
	Default string   // default tag, as the file writes it
	Unit    string   // unit tag of a time.Duration: "ms", "s" or "h"
	Help    string   // help tag
	Allowed string   // allowed tag: the values Validate accepts, when narrower than the type's
	Group   string   // group tag: the --help section
	Values  []string // an enum's spellings, nil for other types
	Kind    string   // what the field's type accepts: "bool", "int", "duration", "enum", "text"

	index []int // path to the field (reflect.Value.FieldByIndex)
}

// Usage is the key's line for --help: its meaning, the unit of a duration and an enum's
// allowed values ("how long a send waits (ms)", "... (one of ASYNC_FLUSH, SYNC_FLUSH)"). The
// caller adds the default.
func (k Key) Usage() string {
	s := k.Help
	if u := unitName(k.Unit); u != "" {
		s += " (" + u + ")"
	}
	if len(k.Values) > 0 {
		s += " (one of " + strings.Join(k.Values, ", ") + ")"
	}
	if k.Allowed != "" {
		s += " (allowed: " + k.Allowed + ")"
	}
	return strings.TrimSpace(s)
}

// AllowedValues says which values the key accepts, for an error message: the allowed tag,
// else what its type accepts ("true or false", "a whole number", "a whole number of ms", an
// enum's spellings), "" for free text.
func (k Key) AllowedValues() string {
	switch {
	case k.Allowed != "":
		return k.Allowed
	case len(k.Values) > 0:
		return OneOf(k.Values)
	}
	switch k.Kind {
	case "bool":
		return "true or false"
	case "int":
		return "a whole number"
	case "duration":
		return "a whole number of " + cmp.Or(unitName(k.Unit), "ms")
	}
	return ""
}

// ValueError is a value a key does not accept: which key, the value as written, what is wrong
// with it and what would be accepted. Set returns it for a value that does not parse;
// Validate methods return it (wrapped) for a value out of range or contradicting another key.
// Where the value came from (file and line, flag) is the loader's to add: it knows.
type ValueError struct {
	Key     string
	Value   string // as written, or as Get prints the field
	Problem string // what is wrong, "" when Allowed says it all
	Allowed string // the values accepted (Key.AllowedValues, or what Validate wants)
}

func (e *ValueError) Error() string {
	s := "key " + e.Key + " = " + strconv.Quote(e.Value)
	if e.Problem != "" {
		s += ": " + e.Problem
	}
	if e.Allowed != "" {
		s += "; allowed: " + e.Allowed
	}
	return s
}

// Invalid returns the ValueError for the current value of key name in settings, with the
// key's allowed values unless allowed says what is wanted here. For Validate methods.
func Invalid(settings any, name, problem, allowed string) *ValueError {
	v, _ := Get(settings, name)
	if allowed == "" {
		k, _ := Lookup(settings, name)
		allowed = k.AllowedValues()
	}
	return &ValueError{Key: name, Value: v, Problem: problem, Allowed: allowed}
}

// layout is what a settings struct type holds: its keys in declaration order, and every
// field with a default (keys or not).
type layout struct {
	keys     []Key
	byName   map[string]int
	defaults []Key
}

var layouts sync.Map // reflect.Type -> *layout

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	stringerType        = reflect.TypeFor[fmt.Stringer]()
	enumType            = reflect.TypeFor[Enum]()
	durationType        = reflect.TypeFor[time.Duration]()
)

// layoutOf describes struct type t. A tag it cannot use (a duplicate key, an unexported or
// unsupported field) is a programmer error and panics.
func layoutOf(t reflect.Type) *layout {
	if l, ok := layouts.Load(t); ok {
		return l.(*layout)
	}
	l := &layout{byName: map[string]int{}}
	l.walk(t, nil)
	actual, _ := layouts.LoadOrStore(t, l)
	return actual.(*layout)
}

func (l *layout) walk(t reflect.Type, parent []int) {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(append([]int(nil), parent...), i)
		name, hasProp := f.Tag.Lookup("prop")
		def, hasDefault := f.Tag.Lookup("default")
		if f.Anonymous && f.Type.Kind() == reflect.Struct && !hasProp && !hasDefault {
			l.walk(f.Type, index)
			continue
		}
		if !hasProp && !hasDefault {
			continue
		}
		if !f.IsExported() {
			panic(fmt.Sprintf("conf: %s.%s: a tagged field must be exported", t, f.Name))
		}
		if !settable(f.Type) {
			panic(fmt.Sprintf("conf: %s.%s: unsupported type %s", t, f.Name, f.Type))
		}
		k := Key{Name: name, Default: def, Unit: f.Tag.Get("unit"), Help: f.Tag.Get("help"),
			Allowed: f.Tag.Get("allowed"), Group: f.Tag.Get("group"), Kind: kindOf(f.Type), index: index}
		if reflect.PointerTo(f.Type).Implements(enumType) {
			k.Values = reflect.New(f.Type).Interface().(Enum).EnumValues()
		}
		if hasDefault {
			l.defaults = append(l.defaults, k)
		}
		if hasProp {
			if name == "" {
				panic(fmt.Sprintf("conf: %s.%s: empty prop tag", t, f.Name))
			}
			if _, dup := l.byName[name]; dup {
				panic(fmt.Sprintf("conf: %s.%s: key %s declared twice", t, f.Name, name))
			}
			l.byName[name] = len(l.keys)
			l.keys = append(l.keys, k)
		}
	}
}

func kindOf(t reflect.Type) string {
	switch {
	case reflect.PointerTo(t).Implements(enumType):
		return "enum"
	case t == durationType:
		return "duration"
	case reflect.PointerTo(t).Implements(textUnmarshalerType), t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Bool:
		return "bool"
	}
	return "int"
}

func settable(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// structOf returns the struct settings points to (or is) and its type; Set needs a pointer.
func structOf(settings any) reflect.Value {
	v := reflect.ValueOf(settings)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("conf: %T is not a settings struct", settings))
	}
	return v
}

// Keys lists the keys of settings (a struct or a pointer to one) in declaration order.
func Keys(settings any) []Key {
	return append([]Key(nil), layoutOf(structOf(settings).Type()).keys...)
}

// Lookup returns the key called name.
func Lookup(settings any, name string) (Key, bool) {
	l := layoutOf(structOf(settings).Type())
	i, ok := l.byName[name]
	if !ok {
		return Key{}, false
	}
	return l.keys[i], true
}

// Set parses value into the field of key name in *settings. found is false when there is
// no such key. A value that does not parse is a *ValueError naming the key, the value and
// the allowed values, and leaves the field as it was.
func Set(settings any, name, value string) (found bool, err error) {
	v := structOf(settings)
	if !v.CanSet() {
		panic(fmt.Sprintf("conf: Set needs a pointer, not %T", settings))
	}
	k, ok := Lookup(settings, name)
	if !ok {
		return false, nil
	}
	if err := setField(v.FieldByIndex(k.index), k.Unit, value); err != nil {
		problem := err.Error()
		if len(k.Values) > 0 {
			problem = "" // the enum's message only lists the spellings, which Allowed does
		}
		return true, &ValueError{Key: name, Value: value, Problem: problem, Allowed: k.AllowedValues()}
	}
	return true, nil
}

// Get prints the field of key name as a file writes it (durations in the key's unit, enums
// in their spelling).
func Get(settings any, name string) (string, bool) {
	k, ok := Lookup(settings, name)
	if !ok {
		return "", false
	}
	return getField(structOf(settings).FieldByIndex(k.index), k.Unit), true
}

// SetDefaults sets every field of *settings that has a default tag (embedded structs' too)
// to that default. A default that does not parse is a programmer error and panics.
func SetDefaults(settings any) {
	v := structOf(settings)
	for _, k := range layoutOf(v.Type()).defaults {
		if err := setField(v.FieldByIndex(k.index), k.Unit, k.Default); err != nil {
			panic(fmt.Sprintf("conf: %s: default %q: %v", v.Type(), k.Default, err))
		}
	}
}

// ParseEnum returns the position of s in names, the spellings an enum accepts (exactly,
// as RocketMQ's Enum.valueOf does), or an error listing them.
func ParseEnum(s string, names ...string) (int, error) {
	for i, n := range names {
		if s == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%q: must be %s", s, OneOf(names))
}

// OneOf lists names for a message: "A", "A or B", "A, B or C".
func OneOf(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func unitOf(unit string) time.Duration {
	switch unit {
	case "h":
		return time.Hour
	case "s":
		return time.Second
	default:
		return time.Millisecond
	}
}

func unitName(unit string) string {
	switch unit {
	case "h":
		return "hours"
	case "s":
		return "s"
	case "ms":
		return "ms"
	}
	return ""
}

func setField(v reflect.Value, unit, s string) error {
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("not true or false")
		}
		v.SetBool(b)
	default: // signed integers (settable)
		n, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return errors.New("out of range")
		}
		if err != nil {
			return errors.New("not a whole number")
		}
		if v.Type() == durationType {
			n = int64(time.Duration(n) * unitOf(unit))
		} else if v.OverflowInt(n) {
			return fmt.Errorf("out of range for a %d-bit number", v.Type().Bits())
		}
		v.SetInt(n)
	}
	return nil
}

func getField(v reflect.Value, unit string) string {
	switch {
	case v.Type() == durationType: // before Stringer: time.Duration has a String method
		return strconv.FormatInt(int64(time.Duration(v.Int())/unitOf(unit)), 10)
	case v.Type().Implements(textMarshalerType):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return fmt.Sprint(v.Interface())
		}
		return string(b)
	case v.Type().Implements(stringerType):
		return v.Interface().(fmt.Stringer).String()
	}
	return fmt.Sprint(v.Interface())
}
