package procs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemStat reads the resident set (VmRSS) and its peak (VmHWM) of process
// pid, in bytes, from /proc/<pid>/status. Both are 0 when the process is
// gone: a measurement, not a check.
func MemStat(pid int) (rss, hwm int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10 // kB
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}

// ResetHWM resets the peak RSS (VmHWM) of process pid to its current RSS,
// so that a later MemStat gives the peak of one pass alone. Best effort:
// the kernel may refuse it (another user's process), and then VmHWM is the
// peak since the start.
func ResetHWM(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
