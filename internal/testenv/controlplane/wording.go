package controlplane

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// What kubectl and the API server print changed in wording between 1.30, the oldest minor
// the docs claim, and 1.36, the default control plane. The suites compare that output
// exactly, so they ask the running control plane (Env.Minor) here rather than branching
// themselves. Only 1.30 and 1.36 are tested: an older wording is taken for 1.30 and
// before, the newer one for every later minor.
const oldestSupportedMinor = 30

func (e *Env) oldWording() bool { return e.Minor <= oldestSupportedMinor }

// KubectlDeleted is what `kubectl delete` prints for a namespaced object: kubectl 1.36 names
// the namespace, 1.30 does not.
func (e *Env) KubectlDeleted(resource, name, namespace string) string {
	if e.oldWording() {
		return fmt.Sprintf("%s %q deleted\n", resource, name)
	}
	return fmt.Sprintf("%s %q deleted from %s namespace\n", resource, name, namespace)
}

// SchemaTooLong is the API server's schema error for a string over its maxLength, after
// the field path: "Too long: may not be longer than N" in 1.30, "... more than N bytes" in
// 1.36.
func (e *Env) SchemaTooLong(maxLength int) string {
	if e.oldWording() {
		return fmt.Sprintf("Too long: may not be longer than %d", maxLength)
	}
	return fmt.Sprintf("Too long: may not be more than %d bytes", maxLength)
}

// NullValue is how the API server quotes a null value in a field error: "null" in 1.30,
// null in 1.36.
func (e *Env) NullValue() string {
	if e.oldWording() {
		return `"null"`
	}
	return "null"
}

// JobSucceededConditions are the condition types the Job controller sets, in order, when a
// non-indexed Job succeeds; suites that play the Job controller write them. 1.36's Job
// status validation wants SuccessCriteriaMet before Complete; 1.30's refuses
// SuccessCriteriaMet on a Job without a success policy.
func (e *Env) JobSucceededConditions() []batchv1.JobConditionType {
	if e.oldWording() {
		return []batchv1.JobConditionType{batchv1.JobComplete}
	}
	return []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}
}

// EnvVarNameRefusal is the API server's pod validation message for an environment variable
// name such as "1BAD=": 1.30 allows only letters, digits, '_', '-' and '.', not first a
// digit; 1.36 any printable ASCII but '=' (RelaxedEnvironmentVariableValidation).
func (e *Env) EnvVarNameRefusal() string {
	if e.oldWording() {
		return `a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit ` +
			`(e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')`
	}
	return "a valid environment variable name must consist only of printable ASCII characters other than '='"
}
