package codec

import "fmt"

// MQVersion ordinals (Java MQVersion.Version) from V4_0_0_SNAPSHOT on follow one pattern:
// for each major.minor.patch with minor and patch 0..9, a _SNAPSHOT then the release, so
// 200 ordinals per major version, up to V5_9_9, after which comes HIGHER_VERSION. Versions
// before 4.0.0 (ordinals 0..211) have no such pattern.
const (
	mqVersionV4Snapshot = 212 // V4_0_0_SNAPSHOT
	mqVersionHigher     = 612 // HIGHER_VERSION
)

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
