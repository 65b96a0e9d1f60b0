package kwokcluster

import (
	"net"
	"os"
	"testing"
)

func TestClaimPodIPBlocksSkipsBlocksHeldElsewhere(t *testing.T) {
	// Another process holding the block this one would try first.
	first := block(os.Getpid() % numBlocks())
	other, err := net.Listen("tcp", net.JoinHostPort(first.Addr().String(), claimPort))
	if err != nil {
		t.Skipf("cannot play the other process: %v", err)
	}
	defer other.Close()

	got, err := ClaimPodIPBlocks(2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ClaimPodIPBlocks(2)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := ClaimPodIPBlock()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range append(got, extra) {
		if b == first || seen[b.String()] || !PodIPs.Contains(b.Addr()) || b.Bits() != blockBits || !b.Addr().IsLoopback() {
			t.Errorf("block %s: held elsewhere, claimed twice, or not a loopback /%d of %s", b, blockBits, PodIPs)
		}
		seen[b.String()] = true
	}
	if got[0] != again[0] || got[1] != again[1] {
		t.Errorf("the same call gave %v, then %v", got, again)
	}
}
