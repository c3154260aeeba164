package controller

import (
	"slices"
)

// elect is Java's DefaultElectPolicy: it tries the SyncStateSet first and, only when all is
// not nil (unclean election enabled), every replica after that. In each round the
// candidates are the members that are alive; the old master is kept if it is one of them
// (and no other replica is preferred); a preferred replica (designated election) is taken
// if it is a candidate, else nobody; otherwise the candidate with the highest epoch, then
// the largest max offset, then the lowest election priority wins — ties go to the lowest
// broker id, so every controller picks the same one (Java takes the first of a TreeSet whose
// comparator calls such candidates equal). noMaster when nobody qualifies.
func elect(syncStateSet, all []int64, alive []Candidate, oldMaster, prefer int64) int64 {
	if m := tryElect(syncStateSet, alive, oldMaster, prefer); m != noMaster {
		return m
	}
	if all != nil {
		return tryElect(all, alive, oldMaster, prefer)
	}
	return noMaster
}

func tryElect(members []int64, alive []Candidate, oldMaster, prefer int64) int64 {
	var candidates []Candidate
	for _, a := range alive {
		if slices.Contains(members, a.BrokerID) {
			candidates = append(candidates, a)
		}
	}
	if len(candidates) == 0 {
		return noMaster
	}
	if oldMaster != noMaster && aliveContains(candidates, oldMaster) && (prefer == noMaster || prefer == oldMaster) {
		return oldMaster
	}
	if prefer != noMaster {
		if aliveContains(candidates, prefer) {
			return prefer
		}
		return noMaster
	}
	best := slices.MinFunc(candidates, func(a, b Candidate) int {
		switch {
		case a.Epoch != b.Epoch:
			return int(b.Epoch) - int(a.Epoch)
		case a.MaxOffset != b.MaxOffset:
			if a.MaxOffset > b.MaxOffset {
				return -1
			}
			return 1
		case a.ElectionPriority != b.ElectionPriority:
			if a.ElectionPriority < b.ElectionPriority {
				return -1
			}
			return 1
		case a.BrokerID < b.BrokerID:
			return -1
		case a.BrokerID > b.BrokerID:
			return 1
		}
		return 0
	})
	return best.BrokerID
}
