package raygatectl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/internal/version"
)

// NewCommand is `kubectl raygate`: kubectl's connection flags (--kubeconfig, --context,
// --namespace, ...) and the subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:           "kubectl-raygate",
		Short:         "Watch and steer RayService upgrades run by raygate, and see where RayJobs and RayClusters are",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	connect := func() (client.Client, string, error) { return connectWith(flags) }
	show := func(renderService func(io.Writer, View) error, renderJob func(io.Writer, JobView) error,
		renderCluster func(io.Writer, ClusterView) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			target, err := ParseTarget(args)
			if err != nil {
				return err
			}
			c, ns, err := connect()
			if err != nil {
				return err
			}
			key := types.NamespacedName{Namespace: ns, Name: target.Name}
			switch target.Kind {
			case rayv1.RayJobKind:
				job := &rayv1.RayJob{}
				if err := c.Get(cmd.Context(), key, job); err != nil {
					return err
				}
				return renderJob(cmd.OutOrStdout(), JobView{Job: job, Now: time.Now()})
			case rayv1.RayClusterKind:
				rc := &rayv1.RayCluster{}
				if err := c.Get(cmd.Context(), key, rc); err != nil {
					return err
				}
				return renderCluster(cmd.OutOrStdout(), ClusterView{Cluster: rc, Now: time.Now()})
			}
			v, err := Read(cmd.Context(), c, ns, target.Name)
			if err != nil {
				return err
			}
			v.Now = time.Now()
			return renderService(cmd.OutOrStdout(), v)
		}
	}
	root.AddCommand(&cobra.Command{
		Use: "status [rayservice|rayjob|raycluster] NAME",
		Short: "A RayService's clusters, capacity, traffic, applications, pending action and next step; a RayJob's statuses, cluster, submission and times; " +
			"a RayCluster's state, workers, resources, head and conditions",
		Example: "  kubectl raygate status my-service\n  kubectl raygate status rayjob my-job\n  kubectl raygate status rayjob/my-job\n  kubectl raygate status raycluster/my-cluster",
		Args:    cobra.RangeArgs(1, 2),
		RunE:    show(RenderStatus, RenderJobStatus, RenderClusterStatus),
	})
	root.AddCommand(&cobra.Command{
		Use:   "why [rayservice|rayjob|raycluster] NAME",
		Short: "The exact conditions a RayService's upgrade waits on; why a RayJob is where it is; a RayCluster's conditions with their messages",
		Args:  cobra.RangeArgs(1, 2),
		RunE:  show(RenderWhy, RenderJobWhy, RenderClusterWhy),
	})
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "The plugin's version, and the image of each raygate operator Deployment it can see",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if _, err := fmt.Fprintf(out, "kubectl-raygate %s\n", version.Version); err != nil {
				return err
			}
			c, _, err := connect()
			if err != nil {
				return err
			}
			lines, err := OperatorVersions(cmd.Context(), c)
			if err != nil {
				lines = []string{fmt.Sprintf("raygate operator: not found (%v)", err)}
			}
			_, err = io.WriteString(out, strings.Join(lines, "\n")+"\n")
			return err
		},
	})
	for _, a := range []struct{ action, short string }{
		{rayv1.UpgradeActionPause, "Freeze the upgrade's capacity and traffic where they are"},
		{rayv1.UpgradeActionResume, "Continue a paused upgrade at its pace, or retry an aborted one"},
		{rayv1.UpgradeActionAbort, "Walk traffic and capacity back to the active cluster, then drop the pending one"},
		{rayv1.UpgradeActionPromote, "Skip the remaining steps: all capacity, then all traffic to the pending cluster"},
	} {
		var target string
		cmd := &cobra.Command{
			Use: a.action + " NAME", Short: a.short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, ns, err := connect()
				if err != nil {
					return err
				}
				msg, err := Act(cmd.Context(), c, ns, args[0], a.action, target)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), msg)
				return err
			},
		}
		if validation.UpgradeTargeted(a.action) {
			cmd.Flags().StringVar(&target, "target", "", "the pending RayCluster the action is for (default: the one in the RayService's status)")
		}
		root.AddCommand(cmd)
	}
	return root
}

// Scheme holds the kinds the plugin reads.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rayv1.AddToScheme, gwv1.Install} {
		if err := add(s); err != nil {
			panic(err) // static registrations
		}
	}
	return s
}

func connectWith(flags *genericclioptions.ConfigFlags) (client.Client, string, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	return c, ns, err
}

// Read gets the RayService and, when it has one, its HTTPRoute. A cluster without the
// Gateway API, or a RayService without a route, shows no route weights.
func Read(ctx context.Context, c client.Client, ns, name string) (View, error) {
	svc := &rayv1.RayService{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		return View{}, err
	}
	v := View{Service: svc}
	rt := &gwv1.HTTPRoute{}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: rayspec.HTTPRouteName(name)}, rt); {
	case err == nil:
		v.Route = rt
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || apierrors.IsForbidden(err):
	default:
		return View{}, err
	}
	return v, nil
}

// ActionPatch is the merge patch that asks for an action: the action and the pending cluster
// it is for (none: the target annotation is removed).
func ActionPatch(action, target string) []byte {
	ann := map[string]any{rayv1.UpgradeActionKey: action, rayv1.UpgradeTargetKey: nil}
	if target != "" {
		ann[rayv1.UpgradeTargetKey] = target
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}}) // maps of strings always marshal
	return b
}

// Act sets the action on the RayService, aimed at the pending cluster of its status unless a
// target is given. Admission decides: its refusal is returned as the API server wrote it.
func Act(ctx context.Context, c client.Client, ns, name, action, target string) (string, error) {
	svc := &rayv1.RayService{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
		return "", err
	}
	if target == "" && validation.UpgradeTargeted(action) {
		target = validation.UpgradeInFlight(&svc.Status)
	}
	if err := c.Patch(ctx, svc, client.RawPatch(types.MergePatchType, ActionPatch(action, target))); err != nil {
		return "", err
	}
	if target == "" {
		return fmt.Sprintf("rayservice.ray.io/%s: %s requested", name, action), nil
	}
	return fmt.Sprintf("rayservice.ray.io/%s: %s requested for pending RayCluster %s", name, action, target), nil
}

// Target is the object status and why show.
type Target struct {
	Kind string // rayv1.RayServiceKind or rayv1.RayJobKind
	Name string
}

// ParseTarget reads status's and why's arguments as kubectl does: NAME (a RayService, as
// before RayJobs were shown), KIND NAME, or KIND/NAME, where KIND is rayservice, rayjob or
// raycluster in any of kubectl's spellings (singular, plural, with the group).
func ParseTarget(args []string) (Target, error) {
	var kind, name string
	switch {
	case len(args) == 2:
		kind, name = args[0], args[1]
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 1:
		kind, name = "rayservice", args[0]
	default:
		return Target{}, fmt.Errorf("expected NAME, KIND NAME or KIND/NAME, got %d arguments", len(args))
	}
	if name == "" {
		return Target{}, fmt.Errorf("no name given in %q", strings.Join(args, " "))
	}
	switch strings.TrimSuffix(strings.ToLower(kind), "."+rayv1.GroupVersion.Group) {
	case "rayservice", "rayservices":
		return Target{Kind: rayv1.RayServiceKind, Name: name}, nil
	case "rayjob", "rayjobs":
		return Target{Kind: rayv1.RayJobKind, Name: name}, nil
	case "raycluster", "rayclusters":
		return Target{Kind: rayv1.RayClusterKind, Name: name}, nil
	}
	return Target{}, fmt.Errorf("kubectl raygate shows rayservice, rayjob and raycluster, not %q", kind)
}

// OperatorDeploymentSelector selects raygate's operator Deployments: the chart's
// app.kubernetes.io/name label.
const OperatorDeploymentSelector = "app.kubernetes.io/name=raygate"

// OperatorVersions names each raygate operator Deployment in any namespace with the image of
// its first container (KubeRay's plugin reports its operator the same way).
func OperatorVersions(ctx context.Context, c client.Client) ([]string, error) {
	sel, err := labels.Parse(OperatorDeploymentSelector)
	if err != nil {
		return nil, err
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return []string{"raygate operator: no Deployment labelled " + OperatorDeploymentSelector + " found"}, nil
	}
	var out []string
	for _, d := range list.Items {
		image := "-"
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			image = cs[0].Image
		}
		out = append(out, fmt.Sprintf("raygate operator: %s (deployment %s/%s)", image, d.Namespace, d.Name))
	}
	return out, nil
}
