package main

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// resourceUsage reads the kernel's accounting of a waited-for process: CPU of the process and of
// its waited-for descendants, and the largest resident set among them (Linux: KiB).
func resourceUsage(state *os.ProcessState) (user, sys time.Duration, maxRSS int64) {
	ru, ok := state.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Maxrss * 1024
}

// setParentDeathSignal kills the command if this process dies first (go test's last resort
// on a hung test kills the -exec process, which must not leave the test binary behind).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
