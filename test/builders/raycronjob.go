package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// RayCronJobWrapper builds a RayCronJob for tests.
type RayCronJobWrapper struct{ rayv1.RayCronJob }

// RayCronJob is a valid RayCronJob running RayJob(name)'s spec every hour, on the hour.
func RayCronJob(name, namespace string) *RayCronJobWrapper {
	return &RayCronJobWrapper{rayv1.RayCronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayCronJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       rayv1.RayCronJobSpec{Schedule: "0 * * * *", JobTemplate: RayJob(name, namespace).Obj().Spec},
	}}
}

// Obj returns the built object.
func (w *RayCronJobWrapper) Obj() *rayv1.RayCronJob { return w.DeepCopy() }

// Schedule sets spec.schedule.
func (w *RayCronJobWrapper) Schedule(s string) *RayCronJobWrapper {
	w.Spec.Schedule = s
	return w
}

// TimeZone sets spec.timeZone.
func (w *RayCronJobWrapper) TimeZone(tz string) *RayCronJobWrapper {
	w.Spec.TimeZone = &tz
	return w
}

// Suspend sets spec.suspend.
func (w *RayCronJobWrapper) Suspend(on bool) *RayCronJobWrapper {
	w.Spec.Suspend = &on
	return w
}
