package kwokcluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
)

// Pod IP blocks are claimed per process: test binaries run in parallel, and two processes
// handing out the same loopback pod IP would let one's simulated Ray answer for the other's
// pods. A process claims a block by listening on the block's first address (which no pod
// gets: it ends in .0) at claimPort, and holds that listener until it exits, so the kernel
// releases the claim whatever way the process ends.
const (
	blockBits = 18
	claimPort = "64999"
)

var claims struct {
	sync.Mutex
	blocks    []netip.Prefix // ClaimPodIPBlocks's, in order
	extra     []netip.Prefix // ClaimPodIPBlock's
	sentinels []net.Listener
}

// numBlocks is how many /18 blocks PodIPs holds.
func numBlocks() int { return 1 << (blockBits - PodIPs.Bits()) }

// block is the i-th /18 of PodIPs.
func block(i int) netip.Prefix { return blockIn(PodIPs, i) }

// blockIn is the i-th /18 of prefix (an IPv4 prefix of at most /18).
func blockIn(prefix netip.Prefix, i int) netip.Prefix {
	a := prefix.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i) << (32 - blockBits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), blockBits)
}

// ClaimPodIPBlocks returns this process's first n pod IP blocks (/18s of PodIPs), claiming
// more as needed; the same call returns the same blocks. Blocks are tried from an offset
// derived from the process ID, so parallel processes rarely contend for the same one.
func ClaimPodIPBlocks(n int) ([]netip.Prefix, error) {
	claims.Lock()
	defer claims.Unlock()
	total := numBlocks()
	start := os.Getpid() % total
	for len(claims.blocks) < n {
		b, err := claimOne(start, total)
		if err != nil {
			return nil, fmt.Errorf("claiming %d pod IP blocks of %s: %w", n, PodIPs, err)
		}
		claims.blocks = append(claims.blocks, b)
	}
	return append([]netip.Prefix(nil), claims.blocks[:n]...), nil
}

// ClaimPodIPBlock claims one more block for this process, apart from ClaimPodIPBlocks's
// (the fake kubelet's pool).
func ClaimPodIPBlock() (netip.Prefix, error) {
	claims.Lock()
	defer claims.Unlock()
	b, err := claimOne(os.Getpid()%numBlocks(), numBlocks())
	if err != nil {
		return netip.Prefix{}, err
	}
	claims.extra = append(claims.extra, b)
	return b, nil
}

// claimOne claims the first free block from start on (claims held).
func claimOne(start, total int) (netip.Prefix, error) {
	for tried := range total {
		b := block((start + tried) % total)
		if slices.Contains(claims.blocks, b) || slices.Contains(claims.extra, b) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(b.Addr().String(), claimPort))
		if err != nil {
			continue // another process holds it
		}
		claims.sentinels = append(claims.sentinels, l)
		return b, nil
	}
	return netip.Prefix{}, errors.New("every block is held by another process")
}
