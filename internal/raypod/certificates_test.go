package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func tlsCluster() *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "team-a").Obj()
	rc.UID = "uid-1"
	rc.Spec.TLSOptions = &rayv1.TLSOptions{}
	return rc
}

func TestTLSObjects(t *testing.T) {
	if got := TLSObjects(builders.RayCluster("demo", "team-a").Obj(), nil, nil, ""); got != nil {
		t.Fatalf("TLS off: %d objects, want none", len(got))
	}
	objs := TLSObjects(tlsCluster(), []string{"127.0.0.9"}, []string{"127.0.0.12", "", "127.0.0.11", "127.0.0.12"}, "")
	type view struct {
		Kind, Name, Component string
		Issuer, Secret        string
		IsCA                  bool
		DNS, IPs              []string
	}
	var got []view
	for _, o := range objs {
		if o.GetNamespace() != "team-a" || o.GetLabels()[rayv1.ClusterLabelKey] != "demo" ||
			o.GetLabels()[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName {
			t.Errorf("%s: namespace %q labels %v", o.GetName(), o.GetNamespace(), o.GetLabels())
		}
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Kind != "RayCluster" || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s: owner references %v, want the cluster as controller", o.GetName(), refs)
		}
		v := view{Kind: o.GetKind(), Name: o.GetName(), Component: o.GetLabels()["app.kubernetes.io/component"]}
		if o.GetKind() == "Certificate" {
			var s CertificateSpec
			if !specOf(o, &s) {
				t.Fatalf("%s: spec does not read back", o.GetName())
			}
			v.Issuer, v.Secret, v.IsCA, v.DNS, v.IPs = s.IssuerRef.Name, s.SecretName, s.IsCA, s.DNSNames, s.IPAddresses
			if s.SecretTemplate == nil || s.SecretTemplate.Labels[rayv1.ClusterLabelKey] != "demo" {
				t.Errorf("%s: the Secret is not labelled with its cluster: %+v", o.GetName(), s.SecretTemplate)
			}
		} else {
			var s IssuerSpec
			specOf(o, &s)
			if s.CA != nil {
				v.Secret = s.CA.SecretName
			}
		}
		got = append(got, v)
	}
	want := []view{
		{Kind: "Issuer", Name: "ray-selfsigned-issuer-demo", Component: "selfsigned-issuer"},
		{Kind: "Certificate", Name: "ray-ca-certificate-demo", Component: "ca-certificate", Issuer: "ray-selfsigned-issuer-demo", Secret: "ray-ca-secret-demo", IsCA: true},
		{Kind: "Issuer", Name: "ray-ca-issuer-demo", Component: "ca-issuer", Secret: "ray-ca-secret-demo"},
		{Kind: "Certificate", Name: "ray-head-cert-demo", Component: "head-certificate", Issuer: "ray-ca-issuer-demo", Secret: "ray-head-secret-demo",
			DNS: []string{"localhost", "demo-head-svc", "demo-head-svc.team-a", "demo-head-svc.team-a.svc", "demo-head-svc.team-a.svc.cluster.local"},
			IPs: []string{"127.0.0.1", "127.0.0.9"}},
		{Kind: "Certificate", Name: "ray-worker-cert-demo", Component: "worker-certificate", Issuer: "ray-ca-issuer-demo", Secret: "ray-worker-secret-demo",
			DNS: []string{"localhost"}, IPs: []string{"127.0.0.1", "127.0.0.11", "127.0.0.12"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The CA keeps its key on renewal, so running pods keep trusting renewed leaves.
	var ca CertificateSpec
	specOf(objs[1], &ca)
	if ca.PrivateKey == nil || ca.PrivateKey.RotationPolicy != "Never" || ca.Duration.Duration != CADuration {
		t.Errorf("CA key %+v duration %v", ca.PrivateKey, ca.Duration)
	}
}

func TestTLSSpecEqual(t *testing.T) {
	desired := TLSObjects(tlsCluster(), []string{"127.0.0.9"}, nil, "")[3]
	stored := desired.DeepCopy()
	// What the API server and cert-manager add, and a spec field raygate does not set.
	stored.Object["status"] = map[string]any{"revision": int64(2)}
	stored.Object["spec"].(map[string]any)["subject"] = map[string]any{"organizations": []any{"acme"}}
	stored.Object["spec"].(map[string]any)["duration"] = "2160h0m0s"
	if !TLSSpecEqual(stored, desired) {
		t.Errorf("an unchanged Certificate must be equal")
	}
	moved := TLSObjects(tlsCluster(), []string{"127.0.0.10"}, nil, "")[3]
	if TLSSpecEqual(stored, moved) {
		t.Fatalf("a new head IP must differ")
	}
	updated := WithTLSSpec(stored, moved)
	if !TLSSpecEqual(updated, moved) {
		t.Errorf("WithTLSSpec does not give the desired spec")
	}
	if _, ok := updated.Object["spec"].(map[string]any)["subject"]; !ok {
		t.Errorf("WithTLSSpec dropped a field raygate does not set")
	}
	if _, ok := updated.Object["status"]; !ok {
		t.Errorf("WithTLSSpec dropped the status")
	}
	issuer := TLSObjects(tlsCluster(), nil, nil, "")[2]
	if !TLSSpecEqual(issuer.DeepCopy(), issuer) || TLSSpecEqual(&unstructured.Unstructured{Object: map[string]any{"kind": "Issuer"}}, issuer) {
		t.Errorf("Issuer comparison")
	}
}
