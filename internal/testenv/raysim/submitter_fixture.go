package raysim

import (
	"fmt"
	"strings"
)

// K8sJobModeCommand is a submitter container's command and args shaped as KubeRay v1.7
// writes them for a RayJob in K8sJobMode (bash -ce with one script: wait for the GCS,
// `ray job status`, `ray job submit --no-wait` only if unknown, `ray job logs --follow`),
// for tests that build submitter pods. address is the dashboard's, http://host:port.
func K8sJobModeCommand(address, submissionID, entrypoint string) (command, args []string) {
	script := []string{
		"until", fmt.Sprintf(`python -c "import urllib.request; r=urllib.request.urlopen('%s/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)"`, address),
		">/dev/null", "2>&1", ";",
		"do", "echo", fmt.Sprintf("%q", "Waiting for Ray Dashboard GCS to become healthy at "+address+" ..."), ";", "sleep", "2", ";", "done", ";",
		"if", "!", "ray", "job", "status", "--address", address, submissionID, ">/dev/null", "2>&1", ";", "then",
		"ray", "job", "submit", "--address", address, "--no-wait", "--submission-id", submissionID, "--", strings.TrimSpace(entrypoint), ";",
		"fi", ";",
		"ray", "job", "logs", "--address", address, "--follow", submissionID,
	}
	return []string{"/bin/bash", "-ce", "--"}, []string{strings.Join(script, " ")}
}
