package main

import "context"

// upgradeResult is the "upgrade" scenario: pacing of an incremental upgrade.
type upgradeResult struct {
	Scenario           string  `json:"scenario"`
	TheoreticalSeconds float64 `json:"theoreticalSeconds"`
	WallSeconds        float64 `json:"wallSeconds"`
	Overhead           float64 `json:"overhead"`
	Error              string  `json:"error,omitempty"`
}

func runUpgrade(ctx context.Context, b *bench) upgradeResult {
	return upgradeResult{Scenario: "upgrade", Error: "not implemented yet"}
}

func renderUpgradeDetails(m *md, u *upgradeResult) {}
