package conf

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type color uint8

var colorNames = []string{"RED", "GREEN"}

func (color) EnumValues() []string           { return colorNames }
func (c color) MarshalText() ([]byte, error) { return []byte(colorNames[c]), nil }
func (c *color) UnmarshalText(b []byte) error {
	i, err := ParseEnum(string(b), colorNames...)
	if err != nil {
		return err
	}
	*c = color(i)
	return nil
}

type inner struct {
	Size     int64          `prop:"size" default:"1024" help:"bytes"`
	Retain   time.Duration  `prop:"retain" unit:"h" default:"72" help:"kept this long"`
	Hidden   time.Duration  `default:"10" unit:"ms"` // no key
	Host     netip.AddrPort `default:"127.0.0.1:1"`
	Untagged int
}

type outer struct {
	Name  string        `prop:"name" default:"x" help:"a name"`
	inner               // embedded: its keys are outer's, here
	Color color         `prop:"color" default:"GREEN" help:"a color"`
	On    bool          `prop:"on" help:"switch"`
	Port  int32         `prop:"port"`
	Wait  time.Duration `prop:"wait" help:"a wait"`
	Level int           `prop:"level" default:"3" allowed:"1..9" group:"tuning" help:"a level"`
}

func TestSettingsKeysDefaultsSetGet(t *testing.T) {
	var names []string
	for _, k := range Keys(outer{}) {
		names = append(names, k.Name)
	}
	require.Equal(t, []string{"name", "size", "retain", "color", "on", "port", "wait", "level"}, names)

	var o outer
	SetDefaults(&o)
	require.Equal(t, outer{Name: "x", inner: inner{Size: 1024, Retain: 72 * time.Hour, Hidden: 10 * time.Millisecond,
		Host: netip.MustParseAddrPort("127.0.0.1:1")}, Color: 1, Level: 3}, o)

	for key, value := range map[string]string{"size": "2048", "retain": "48", "color": "RED", "on": "true",
		"wait": "1500", "name": ""} {
		found, err := Set(&o, key, value)
		require.True(t, found, key)
		require.NoError(t, err, key)
		got, ok := Get(&o, key)
		require.True(t, ok)
		require.Equal(t, value, got, key)
	}
	require.Equal(t, 48*time.Hour, o.Retain)
	require.Equal(t, 1500*time.Millisecond, o.Wait, "milliseconds unless the unit says otherwise")
	require.Equal(t, color(0), o.Color)

	found, err := Set(&o, "nope", "1")
	require.False(t, found)
	require.NoError(t, err)
	_, ok := Get(&o, "Hidden")
	require.False(t, ok, "a field without prop is not a key")
	// A value that does not parse names the key, the value and what is allowed, and changes nothing.
	before := o
	for key, want := range map[string]string{
		"size":   `key size = "big": not a whole number; allowed: a whole number`,
		"on":     `key on = "big": not true or false; allowed: true or false`,
		"color":  `key color = "big"; allowed: RED or GREEN`,
		"retain": `key retain = "big": not a whole number; allowed: a whole number of hours`,
		"level":  `key level = "big": not a whole number; allowed: 1..9`,
	} {
		_, err := Set(&o, key, "big")
		require.EqualError(t, err, want, key)
		var ve *ValueError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, key, ve.Key)
		require.Equal(t, "big", ve.Value)
	}
	require.Equal(t, before, o)
	_, err = Set(&o, "port", "4294967296")
	require.EqualError(t, err, `key port = "4294967296": out of range for a 32-bit number; allowed: a whole number`)
	_, err = Set(&o, "size", "99999999999999999999")
	require.EqualError(t, err, `key size = "99999999999999999999": out of range; allowed: a whole number`)

	o.Level = 12
	require.EqualError(t, Invalid(&o, "level", "too high", ""), `key level = "12": too high; allowed: 1..9`)
	require.EqualError(t, Invalid(&o, "level", "", "less than size"), `key level = "12"; allowed: less than size`)

	k, ok := Lookup(outer{}, "color")
	require.True(t, ok)
	require.Equal(t, "a color (one of RED, GREEN)", k.Usage())
	k, _ = Lookup(outer{}, "retain")
	require.Equal(t, "kept this long (hours)", k.Usage())
	k, _ = Lookup(outer{}, "port")
	require.Empty(t, k.Usage())
	k, _ = Lookup(outer{}, "level")
	require.Equal(t, "a level (allowed: 1..9)", k.Usage())
	require.Equal(t, "tuning", k.Group)
	for key, want := range map[string]string{"name": "", "on": "true or false", "wait": "a whole number of ms",
		"color": "RED or GREEN", "level": "1..9", "size": "a whole number"} {
		k, _ := Lookup(outer{}, key)
		require.Equal(t, want, k.AllowedValues(), key)
	}
}

func TestSettingsProgrammerErrorsPanic(t *testing.T) {
	type dup struct {
		A int `prop:"a"`
		B int `prop:"a"`
	}
	require.Panics(t, func() { Keys(dup{}) })
	type badDefault struct {
		A int `prop:"a" default:"x"`
	}
	require.Panics(t, func() { SetDefaults(&badDefault{}) })
	type unsupported struct {
		A float64 `prop:"a"`
	}
	require.Panics(t, func() { Keys(unsupported{}) })
	require.Panics(t, func() { _, _ = Set(outer{}, "name", "y") }, "Set needs a pointer")
}

func TestOneOf(t *testing.T) {
	require.Equal(t, "A", OneOf([]string{"A"}))
	require.Equal(t, "A or B", OneOf([]string{"A", "B"}))
	require.Equal(t, "A, B or C", OneOf([]string{"A", "B", "C"}))
}
