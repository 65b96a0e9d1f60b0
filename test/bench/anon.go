package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// anonSampler follows an operator's anonymous resident memory (RssAnon: heap, stacks, the Go
// runtime). VmHWM, the peak RSS the tables report, also counts the pages of the operator's own
// binary it has touched (code and read-only data: about 40 MB for raygate and for KubeRay,
// measured with /proc/<pid>/smaps), which are clean file pages the kernel can drop and read
// again at any time. The kernel keeps no high-water mark of RssAnon alone, so it is sampled
// every anonSampleEvery until the process is gone; a peak shorter than that can be missed.
type anonSampler struct {
	mu     sync.Mutex
	peakKB float64
}

const anonSampleEvery = 200 * time.Millisecond

func sampleAnon(pid int) *anonSampler {
	s := &anonSampler{}
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		for {
			b, err := os.ReadFile(path)
			if err != nil {
				return // the process is gone
			}
			if kb, ok := rssAnonKB(string(b)); ok {
				s.mu.Lock()
				s.peakKB = max(s.peakKB, kb)
				s.mu.Unlock()
			}
			time.Sleep(anonSampleEvery)
		}
	}()
	return s
}

func (s *anonSampler) peakMB() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakKB / 1024
}

// rssAnonKB reads RssAnon from /proc/<pid>/status.
func rssAnonKB(status string) (float64, bool) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, false
			}
			kb, err := strconv.ParseFloat(f[0], 64)
			return kb, err == nil
		}
	}
	return 0, false
}
