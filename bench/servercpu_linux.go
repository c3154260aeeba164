package bench

import (
	"os"
	"strconv"
	"time"
)

// pidCPU is the user + system CPU time of process pid, all its threads.
func pidCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseProcPidStatCPU(string(data))
}
