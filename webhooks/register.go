package webhooks

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/admissionjson"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/poddryrun"
	"github.com/raygate/raygate/internal/validation"
)

// DefaultLookupTimeout bounds each lookup (GatewayClass, namespace, quotas), well inside the
// API server's 5-second webhook timeout.
const DefaultLookupTimeout = 2 * time.Second

// Options are what the handlers need from the manager.
type Options struct {
	// Reader looks up GatewayClasses for warnings and whether cert-manager is installed for
	// clusters with tlsOptions: the manager's API reader (direct reads, no cache or watch).
	// Nil skips the lookups.
	Reader client.Reader
	// Gates is read on every request; nil means features.Default() (the --feature-gates state).
	Gates features.Gates
	// LookupTimeout bounds the GatewayClass lookup; zero means DefaultLookupTimeout.
	LookupTimeout time.Duration
	// Limits bound the pods one cluster may ask for (--max-pods-per-group,
	// --max-pods-per-cluster); the zero value means validation.DefaultLimits().
	Limits validation.Limits
	// Policy is what the cluster admin allows (--allowed-*, --pod-security-*); the zero value
	// allows everything.
	Policy validation.Policy
	// Namespaces reads the namespace of an object (its Pod Security labels, as
	// metav1.PartialObjectMetadata) and its ResourceQuotas: the manager's cache. Nil skips
	// the Pod Security and quota checks. A namespace the cache does not hold yet is read
	// with Reader.
	Namespaces client.Reader
	// PodDryRun creates the pods an object would get with dryRun=All, so the API server
	// answers for them at admission (--pod-dry-run; internal/poddryrun): the manager's
	// poddryrun.RESTCreator. Nil: off.
	PodDryRun poddryrun.Creator
	// WatchNamespaces are the namespaces the controllers run objects in (--watch-namespace;
	// empty: all). Pods are dry-run only there: elsewhere the operator has no right to create
	// pods, and the chart's webhooks do not see those namespaces.
	WatchNamespaces []string
	// Budget bounds the time one validating review spends on lookups and the dry-run;
	// zero means DefaultBudget.
	Budget time.Duration
	// DisableZeroDowntime is the operator's ENABLE_ZERO_DOWNTIME=false: an unset RayService
	// spec.upgradeStrategy.type is left unset (not defaulted to NewCluster), so the
	// controller follows the setting for it (see defaulting.RayServiceWith).
	DisableZeroDowntime bool
}

// Handlers are the admission handlers, by path.
func Handlers(o Options) map[string]admission.Handler {
	if o.Gates == nil {
		o.Gates = features.Default()
	}
	if o.LookupTimeout == 0 {
		o.LookupTimeout = DefaultLookupTimeout
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	// Validation reads the pod templates, defaulting does not: the mutating handlers decode
	// objects without them (admissionjson.DecodeWithoutTemplates).
	decoder := admissionjson.NewSharingDecoder()
	validator := validation.Validator{Gates: o.Gates, Limits: o.Limits, Policy: o.Policy}
	namespaces := namespaceLookup{reader: o.Namespaces, live: o.Reader, timeout: o.LookupTimeout}
	direct := lookup{reader: o.Reader, timeout: o.LookupTimeout}
	certManager := certManagerLookup{direct}
	dryRun := podDryRun{policy: o.Policy, gates: o.Gates, watched: o.WatchNamespaces}
	if o.PodDryRun != nil {
		dryRun.checker = poddryrun.New(o.PodDryRun)
	}
	ray := rayAdmission{decoder: decoder, validator: validator, namespaces: namespaces, certManager: certManager, dryRun: dryRun, budget: o.Budget}
	jobs := ray
	jobs.decoder = plainDecoder{}
	return map[string]admission.Handler{
		MutateRayClusterPath: &mutator[*rayv1.RayCluster]{newObj: func() *rayv1.RayCluster { return &rayv1.RayCluster{} }, apply: defaulting.RayCluster},
		MutateRayServicePath: &mutator[*rayv1.RayService]{newObj: func() *rayv1.RayService { return &rayv1.RayService{} }, apply: func(svc *rayv1.RayService) {
			defaulting.RayServiceWith(svc, !o.DisableZeroDowntime)
		}},
		ValidateRayClusterPath:    &rayClusterValidator{ray},
		ValidateRayServicePath:    &rayServiceValidator{rayAdmission: ray, gatewayClasses: gatewayClassLookup{direct}, sharedGateways: sharedGatewayLookup{direct}},
		ValidateUpgradePolicyPath: &upgradePolicyValidator{decoder: plainDecoder{}},
		MutateRayJobPath:          &mutator[*rayv1.RayJob]{newObj: func() *rayv1.RayJob { return &rayv1.RayJob{} }, apply: defaulting.RayJob},
		ValidateRayJobPath:        &rayJobValidator{jobs},
		MutateRayCronJobPath:      rayCronJobMutator(),
		ValidateRayCronJobPath:    &rayCronJobValidator{jobs},
		ValidateDeletingPath:      deletingValidator{},
	}
}

// Register adds the webhooks to the manager's webhook server.
func Register(srv webhook.Server, o Options) {
	for path, h := range Handlers(o) {
		srv.Register(path, &webhook.Admission{Handler: counted{path: path, next: h}, WithContextFunc: withWebhookTimeout})
	}
}
