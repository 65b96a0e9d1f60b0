package main

import (
	"testing"
	"time"
)

func TestOverlayReplacesOnlyTheScenariosRun(t *testing.T) {
	saved := &results{
		Machine:   machine{Commit: "full"},
		Scale:     []scaleResult{{Clusters: 1000}},
		Admission: &admissionResult{},
		Memory:    &memoryResult{},
	}
	freshAdmission := &admissionResult{}
	run := &results{Machine: machine{Commit: "part"}, Started: time.Unix(100, 0), Admission: freshAdmission, Command: "go run ./test/bench -scenarios=admission -partial"}
	got := overlay(saved, run, []string{"admission"})
	if got.Admission != freshAdmission {
		t.Error("the re-measured admission figures were not taken")
	}
	if len(got.Scale) != 1 || got.Scale[0].Clusters != 1000 || got.Memory != saved.Memory {
		t.Error("scenarios the partial run did not measure lost their saved figures")
	}
	if got.Machine.Commit != "full" {
		t.Errorf("the full run's machine was replaced: %q", got.Machine.Commit)
	}
	if len(got.Partial) != 1 || got.Partial[0].Machine.Commit != "part" || got.Partial[0].Scenarios[0] != "admission" {
		t.Errorf("the partial run is not recorded: %+v", got.Partial)
	}
	again := overlay(got, run, []string{"admission"})
	if len(again.Partial) != 2 || len(got.Partial) != 1 {
		t.Error("a second partial run must append without changing the first merge")
	}
}
