package webhooks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/raygate/raygate/internal/validation"
)

func TestCertManagerLookup(t *testing.T) {
	// The API server answers a list of a kind it does not serve with "no matches for kind".
	served := func(kinds ...string) client.Reader {
		return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				gvk := list.GetObjectKind().GroupVersionKind()
				kind := strings.TrimSuffix(gvk.Kind, "List")
				if !slices.Contains(kinds, kind) {
					return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gvk.Group, Kind: kind}, SearchedVersions: []string{gvk.Version}}
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	}
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("connection refused")
	}}).Build()
	cases := map[string]struct {
		reader client.Reader
		want   validation.CertManagerState
	}{
		"no reader":            {want: validation.CertManagerUnknown},
		"installed":            {reader: served("Certificate", "Issuer"), want: validation.CertManagerInstalled},
		"not installed":        {reader: served(), want: validation.CertManagerNotInstalled},
		"Issuers missing":      {reader: served("Certificate"), want: validation.CertManagerNotInstalled},
		"lookup fails (other)": {reader: failing, want: validation.CertManagerUnknown},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := certManagerLookup{lookup{reader: tc.reader, timeout: time.Second}}.state(context.Background(), "ns")
			if got != tc.want {
				t.Errorf("state = %v, want %v", got, tc.want)
			}
		})
	}
}
