package codec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MQVersion is an ordinal of Java's MQVersion.Version enum: what the version field of a remoting
// command carries and what a broker reports as brokerVersion.
type MQVersion int32

// MQVersion ordinals (Java MQVersion.Version) from V4_0_0_SNAPSHOT on follow one pattern:
// for each major.minor.patch with minor and patch 0..9, a _SNAPSHOT then the release, so
// 200 ordinals per major version, up to V5_9_9, after which comes HIGHER_VERSION. Versions
// before 4.0.0 (ordinals 0..211) have no such pattern.
const (
	mqVersionV4Snapshot = 212 // V4_0_0_SNAPSHOT
	mqVersionHigher     = 612 // HIGHER_VERSION
)

// ErrMQVersion: a version name that is not one of MQVersion's V4_x_y / V5_x_y names.
var ErrMQVersion = errors.New("codec: not a RocketMQ version name (V4_0_0 .. V5_9_9, optionally _SNAPSHOT)")

// MQVersionName returns the Java enum name of an MQVersion ordinal, as RocketMQ's
// MQVersion.getVersionDesc prints it: 401 → "V4_9_4", 479 → "V5_3_3". Ordinals before 4.0.0
// come back as "V3(n)", ordinals past the enum as "HIGHER_VERSION".
func MQVersionName(ordinal int32) string {
	switch {
	case ordinal < 0:
		return fmt.Sprintf("Version(%d)", ordinal)
	case ordinal < mqVersionV4Snapshot:
		return fmt.Sprintf("V3(%d)", ordinal)
	case ordinal >= mqVersionHigher:
		return "HIGHER_VERSION"
	}
	k := int(ordinal - mqVersionV4Snapshot)
	name := fmt.Sprintf("V%d_%d_%d", 4+k/200, k%200/20, k%20/2)
	if k%2 == 0 {
		name += "_SNAPSHOT"
	}
	return name
}

// ParseMQVersion is MQVersionName's inverse for the 4.x and 5.x names: "V4_9_8" → 409,
// "V5_0_0_SNAPSHOT" → 412.
func ParseMQVersion(name string) (MQVersion, error) {
	rest, snapshot := strings.CutSuffix(name, "_SNAPSHOT")
	parts := strings.Split(strings.TrimPrefix(rest, "V"), "_")
	if !strings.HasPrefix(rest, "V") || len(parts) != 3 {
		return 0, fmt.Errorf("%w: %q", ErrMQVersion, name)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || len(p) != 1 {
			return 0, fmt.Errorf("%w: %q", ErrMQVersion, name)
		}
		n[i] = v
	}
	if n[0] != 4 && n[0] != 5 {
		return 0, fmt.Errorf("%w: %q", ErrMQVersion, name)
	}
	k := (n[0]-4)*200 + n[1]*20 + n[2]*2 + 1
	if snapshot {
		k--
	}
	return MQVersion(mqVersionV4Snapshot + k), nil
}

// Valid reports whether v is a 4.x or 5.x version, one ParseMQVersion accepts.
func (v MQVersion) Valid() bool { return v >= mqVersionV4Snapshot && v < mqVersionHigher }

// String returns the Java enum name (MQVersionName).
func (v MQVersion) String() string { return MQVersionName(int32(v)) }

// MarshalText returns the Java enum name.
func (v MQVersion) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a Java enum name (ParseMQVersion).
func (v *MQVersion) UnmarshalText(text []byte) error {
	p, err := ParseMQVersion(string(text))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
