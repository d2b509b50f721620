package procs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux the harnesses run on).
const userHZ = 100

// CPUSeconds is the user+system CPU time process pid has used, from
// /proc/<pid>/stat: the harnesses report the CPU a server spent on a pass
// as the difference of two readings. It is 0 when the process is gone or
// the file cannot be parsed: a measurement, not a check.
func CPUSeconds(pid int) float64 {
	f, ok := statFields(pid)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / userHZ
}

// statFields are the fields of /proc/<pid>/stat after the command name,
// state first. The name, in parentheses, may hold spaces and parentheses:
// the fields start after the last ')'.
func statFields(pid int) ([]string, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, false
	}
	return strings.Fields(s[i+2:]), true
}
