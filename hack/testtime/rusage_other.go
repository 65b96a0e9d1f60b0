//go:build !linux

package main

import (
	"os"
	"os/exec"
	"time"
)

// resourceUsage reports wall time only off Linux (peak RSS units differ between kernels).
func resourceUsage(state *os.ProcessState) (user, sys time.Duration, maxRSS int64) {
	return state.UserTime(), state.SystemTime(), 0
}

func setParentDeathSignal(*exec.Cmd) {}
