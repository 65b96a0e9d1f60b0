package poddryrun

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	pods    = schema.GroupResource{Resource: "pods"}
	podKind = schema.GroupKind{Kind: "Pod"}
)

func forbidden(msg string) error {
	return apierrors.NewForbidden(pods, "raygate-dry-run-head-", errors.New(msg))
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name             string
		err, ctxErr      error
		want             kind
		level            string
		afterPodSecurity bool
		message          string
	}{
		{"admitted", nil, nil, admitted, "", false, ""},
		{"the caller's deadline", errors.New("Post ...: context deadline exceeded"), context.DeadlineExceeded, notChecked, "", false, "it did not finish in time"},
		{"a deadline error", context.DeadlineExceeded, nil, notChecked, "", false, "it did not finish in time"},
		{"not an API error", errors.New("connection refused"), nil, notChecked, "", false, "connection refused"},
		{"pod validation", apierrors.NewInvalid(podKind, "raygate-dry-run-head-", field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("env").Index(0).Child("name"), "1BAD=", "bad")}),
			nil, refused, "", false, `spec.containers[0].env[0].name: Invalid value: "1BAD=": bad`},
		{"a LimitRange", forbidden("maximum cpu usage per Container is 2, but limit is 4"), nil, refused, "", false, "maximum cpu usage per Container is 2, but limit is 4"},
		{"Pod Security", forbidden(`violates PodSecurity "baseline:latest": privileged (container "ray-head" must not set securityContext.privileged=true)`), nil,
			refusedByPodSecurity, "baseline:latest", false, `violates PodSecurity "baseline:latest": privileged (container "ray-head" must not set securityContext.privileged=true)`},
		{"Pod Security at a version", forbidden(`violates PodSecurity "restricted:v1.30": runAsNonRoot != true`), nil, refusedByPodSecurity, "restricted:v1.30", false, `violates PodSecurity "restricted:v1.30": runAsNonRoot != true`},
		{"an unreadable level", forbidden(`violates PodSecurity "strict:latest": x`), nil, refused, "", false, `violates PodSecurity "strict:latest": x`},
		{"an admission policy", forbidden("ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: no :latest images"), nil,
			refused, "", true, "ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: no :latest images"},
		{"another webhook", forbidden(`admission webhook "validation.gatekeeper.sh" denied the request: [no-latest] no :latest images`), nil,
			refused, "", true, `admission webhook "validation.gatekeeper.sh" denied the request: [no-latest] no :latest images`},
		{"a quota", forbidden("exceeded quota: q, requested: cpu=4, used: cpu=0, limited: cpu=2"), nil, quotaOnly, "", true, "exceeded quota: q, requested: cpu=4, used: cpu=0, limited: cpu=2"},
		{"a quota's missing requests", forbidden("failed quota: q: must specify limits.cpu for: ray-head"), nil, quotaOnly, "", true, "failed quota: q: must specify limits.cpu for: ray-head"},
		{"a missing ServiceAccount", forbidden(`error looking up service account ns/sa: serviceaccount "sa" not found`), nil, missingServiceAccount, "", false,
			`error looking up service account ns/sa: serviceaccount "sa" not found`},
		{"no right to create pods", apierrors.NewForbidden(pods, "", errors.New(`User "system:serviceaccount:raygate:raygate" cannot create resource "pods" in API group "" in the namespace "ns"`)),
			nil, notChecked, "", false, `User "system:serviceaccount:raygate:raygate" cannot create resource "pods" in API group "" in the namespace "ns"`},
		{"a webhook with side effects", apierrors.NewBadRequest(`admission webhook "audit.example.com" does not support dry run`), nil, notChecked, "", false,
			`admission webhook "audit.example.com" does not support dry run`},
		{"a failing webhook", apierrors.NewInternalError(errors.New(`failed calling webhook "x": connection refused`)), nil, notChecked, "", false,
			`Internal error occurred: failed calling webhook "x": connection refused`},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), nil, notChecked, "", false, "slow down"},
		{"the namespace is going", forbidden(`unable to create new content in namespace ns because it is being terminated`), nil, notChecked, "", false,
			"unable to create new content in namespace ns because it is being terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := classify(tt.err, tt.ctxErr)
			level := ""
			if v.kind == refusedByPodSecurity {
				level = v.level.String()
			}
			if v.kind != tt.want || level != tt.level || v.afterPodSecurity != tt.afterPodSecurity || v.message != tt.message {
				t.Errorf("classify = kind %d, level %q, after Pod Security %v, message %q; want %d, %q, %v, %q",
					v.kind, level, v.afterPodSecurity, v.message, tt.want, tt.level, tt.afterPodSecurity, tt.message)
			}
		})
	}
}
