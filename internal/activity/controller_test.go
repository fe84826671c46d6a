/*
Copyright The appservice-controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package activity

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	"example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// Unit tests of single syncs of an Activity against fake clients: which
// calls each state of the run makes, the status it writes and the Events.
// TestActivity in test/e2e runs the same against a real control plane.

var activityKey = cache.ObjectName{Namespace: fixtures.Namespace, Name: fixtures.ActivityName}

// liveJob is the Activity's Job as the API server and the Job controller
// keep it, with status, and a finalizer someone else added.
func liveJob(status batchv1.JobStatus) *batchv1.Job {
	j := children.NewJob(fixtures.Activity())
	j.UID, j.ResourceVersion = "job-uid", "30"
	j.Finalizers = append(j.Finalizers, "someone/else")
	j.Status = status
	return j
}

// withTTL is act, finished just now, with a TTL.
func withTTL(act *appv1.Activity, seconds int32) *appv1.Activity {
	act.Spec.TTLSecondsAfterFinished = &seconds
	act.Status.CompletionTime = new(metav1.Now())
	return act
}

// released is j without our finalizer.
func released(j *batchv1.Job) *batchv1.Job {
	j.Finalizers = slices.DeleteFunc(j.Finalizers, func(f string) bool { return f == appv1.FinalizerActivityStatus })
	return j
}

// deleting is j being deleted, held by the finalizers.
func deleting(j *batchv1.Job) *batchv1.Job {
	j.DeletionTimestamp = &finished
	return j
}

// ofAnEarlierActivity is j controlled by an Activity of the same name
// deleted since.
func ofAnEarlierActivity(j *batchv1.Job) *batchv1.Job {
	j.OwnerReferences[0].UID = "an-earlier-one"
	return j
}

// activityFixture is an Activity controller on fake clients, for single
// syncs: the API holds act (unless nil: gone), job (unless nil) and
// apiOnly; the caches hold act and job, as the informers keep them.
type activityFixture struct {
	c          *Controller
	kubeClient *k8sfake.Clientset
	appClient  *fake.Clientset
	recorder   *record.FakeRecorder
	jobs       cache.Indexer
	syncCtx    context.Context
}

func newActivityFixture(t *testing.T, act *appv1.Activity, job *batchv1.Job, apiOnly ...runtime.Object) *activityFixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	kubeObjects, appObjects := apiOnly, []runtime.Object{}
	if job != nil {
		kubeObjects = append(kubeObjects, job)
	}
	if act != nil {
		appObjects = append(appObjects, act)
	}
	f := &activityFixture{
		kubeClient: k8sfake.NewClientset(kubeObjects...), appClient: fake.NewClientset(appObjects...),
		recorder: record.NewFakeRecorder(10), syncCtx: ctx,
	}
	jobInformers := kubeinformers.NewSharedInformerFactory(f.kubeClient, 0)
	activities := appinformers.NewSharedInformerFactory(f.appClient, 0).App().V1().Activities()
	var err error
	if f.c, err = NewController(ctx, f.kubeClient, f.appClient, jobInformers, activities, f.recorder); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.c.queue.ShutDown)
	if act != nil {
		fixtures.MustAdd(t, activities.Informer().GetIndexer(), act)
	}
	f.jobs = jobInformers.Batch().V1().Jobs().Informer().GetIndexer()
	if job != nil {
		cacheJob(t, f.jobs, job)
	}
	return f
}

// sync runs one sync of the fixture's Activity.
func (f *activityFixture) sync() error { return f.c.syncActivity(f.syncCtx, activityKey) }

// calls are the calls both fake clients received, in order.
func (f *activityFixture) calls() []string {
	var calls []string
	for _, a := range append(f.kubeClient.Actions(), f.appClient.Actions()...) {
		calls = append(calls, fixtures.Describe(a))
	}
	return calls
}

// cacheJob puts job in the Jobs' cache as their informer keeps it
// (children.Trim), or replaces the one there.
func cacheJob(t *testing.T, jobs cache.Store, job *batchv1.Job) {
	t.Helper()
	cached, err := children.Trim(job)
	if err == nil {
		err = jobs.Update(cached) // an Update of a key not held adds it
	}
	if err != nil {
		t.Fatal(err)
	}
}

var (
	started  = metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	finished = metav1.NewTime(started.Add(5 * time.Second))
)

func TestSyncActivity(t *testing.T) {
	startedAct := func(phase appv1.ActivityPhase) *appv1.Activity {
		act := fixtures.Activity()
		act.Status = appv1.ActivityStatus{ObservedGeneration: 1, Prosta: phase, StartTime: &started}
		return act
	}
	failedPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleep-once-abcde", Namespace: fixtures.Namespace, Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "activity", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "one\ntwo\n"}},
		}}},
	}
	tests := []struct {
		name       string
		act        *appv1.Activity
		job        *batchv1.Job
		apiOnly    []runtime.Object
		wantCalls  []string
		wantPhase  appv1.ActivityPhase
		wantExit   *int32
		wantReason map[string]string // condition type → reason, for the True ones
		wantEvents []string
		wantErr    bool // reported, and retried with backoff
		gone       bool // the Activity is deleted: in neither the cache nor the API
	}{
		{
			name: "new: the Job is created", act: fixtures.Activity(),
			wantCalls: []string{"create jobs", "update activities/status"}, wantPhase: appv1.ActivityPending,
			wantReason: map[string]string{appv1.ConditionReconciling: appv1.ReasonPending},
			wantEvents: []string{fixtures.Normal(appv1.ReasonCreated, "Created Job sleep-once")},
		},
		{
			name: "the Pod runs", act: startedAct(appv1.ActivityPending), job: liveJob(batchv1.JobStatus{StartTime: &started, Active: 1, Ready: new(int32(1))}),
			wantCalls: []string{"update activities/status"}, wantPhase: appv1.ActivityRunning,
			wantReason: map[string]string{appv1.ConditionReconciling: appv1.ReasonRunning},
		},
		{
			name: "the command exited 0", act: startedAct(appv1.ActivityRunning),
			job: liveJob(batchv1.JobStatus{StartTime: &started, CompletionTime: &finished, Succeeded: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: finished},
			}}),
			wantCalls: []string{"patch jobs", "update activities/status"}, wantPhase: appv1.ActivitySucceeded, wantExit: new(int32(0)),
			wantReason: map[string]string{appv1.ConditionComplete: "CompletionsReached"},
			wantEvents: []string{fixtures.Normal(appv1.ReasonSucceeded, "The command exited 0 after 5s")},
		},
		{
			name: "the command failed: its Pod is read once", act: startedAct(appv1.ActivityRunning), apiOnly: []runtime.Object{failedPod},
			job: liveJob(batchv1.JobStatus{StartTime: &started, Failed: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: finished},
			}}),
			wantCalls: []string{"list pods", "patch jobs", "update activities/status"}, wantPhase: appv1.ActivityFailed, wantExit: new(int32(3)),
			wantReason: map[string]string{appv1.ConditionFailed: "BackoffLimitExceeded", appv1.ConditionStalled: "BackoffLimitExceeded"},
			wantEvents: []string{fixtures.Warning("BackoffLimitExceeded", "The command exited 3 (Error):\none\ntwo")},
		},
		{
			name: "past its deadline, the Pod gone: the Job's message", act: startedAct(appv1.ActivityRunning),
			job: liveJob(batchv1.JobStatus{StartTime: &started, Failed: 1, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastTransitionTime: finished},
			}}),
			wantCalls: []string{"list pods", "patch jobs", "update activities/status"}, wantPhase: appv1.ActivityFailed,
			wantReason: map[string]string{appv1.ConditionFailed: "DeadlineExceeded", appv1.ConditionStalled: "DeadlineExceeded"},
			wantEvents: []string{fixtures.Warning("DeadlineExceeded", "Job was active longer than specified deadline")},
		},
		{
			name: "the Job deleted mid-run: Failed, and not run again", act: startedAct(appv1.ActivityRunning),
			wantCalls: []string{"update activities/status"}, wantPhase: appv1.ActivityFailed,
			wantReason: map[string]string{appv1.ConditionFailed: appv1.ReasonJobDeleted, appv1.ConditionStalled: appv1.ReasonJobDeleted},
			wantEvents: []string{fixtures.Warning(appv1.ReasonJobDeleted, "The Job was deleted before the command finished; it is not run again (create a new Activity to run it again)")},
		},
		{
			name: "finished: nothing at all, not even a read", act: startedAct(appv1.ActivitySucceeded),
			job: released(liveJob(batchv1.JobStatus{Succeeded: 1})),
		},
		{
			name: "finished with a TTL, its Job deleted at the TTL: deleted too", act: withTTL(startedAct(appv1.ActivitySucceeded), 0),
			wantCalls: []string{"delete activities"},
		},
		{
			name: "finished with a TTL, its Job still there: kept", act: withTTL(startedAct(appv1.ActivitySucceeded), 0),
			job: released(liveJob(batchv1.JobStatus{Succeeded: 1})),
		},
		{
			name: "finished with a TTL to come, its Job deleted by someone: kept until the TTL", act: withTTL(startedAct(appv1.ActivitySucceeded), 3600),
		},
		{
			name: "finished, its Job still held: released", act: startedAct(appv1.ActivitySucceeded),
			job: liveJob(batchv1.JobStatus{Succeeded: 1}), wantCalls: []string{"patch jobs"},
		},
		{
			name: "deleted, its Job held: released for the garbage collector", act: fixtures.Activity(), gone: true,
			job: liveJob(batchv1.JobStatus{Active: 1}), wantCalls: []string{"patch jobs"},
		},
		{
			name: "the Job deleted mid-run, held by our finalizer: Failed, then released", act: startedAct(appv1.ActivityRunning),
			job:       deleting(liveJob(batchv1.JobStatus{StartTime: &started, Active: 1, Ready: new(int32(1))})),
			wantCalls: []string{"patch jobs", "update activities/status"}, wantPhase: appv1.ActivityFailed,
			wantReason: map[string]string{appv1.ConditionFailed: appv1.ReasonJobDeleted, appv1.ConditionStalled: appv1.ReasonJobDeleted},
			wantEvents: []string{fixtures.Warning(appv1.ReasonJobDeleted, "The Job was deleted before the command finished; it is not run again (create a new Activity to run it again)")},
		},
		{
			name: "a Job held for an earlier Activity of the name: released", act: fixtures.Activity(),
			job:       ofAnEarlierActivity(liveJob(batchv1.JobStatus{Succeeded: 1})),
			wantCalls: []string{"patch jobs", "update activities/status"}, wantPhase: appv1.ActivityPending, wantErr: true,
			wantReason: map[string]string{appv1.ConditionStalled: appv1.ReasonResourceExists},
			wantEvents: []string{fixtures.Warning(appv1.ReasonResourceExists, "Job default/sleep-once already exists and is not controlled by Activity sleep-once; it is left untouched")},
		},
		{
			name: "someone's Job of the name: left alone, Stalled", act: fixtures.Activity(),
			job:       &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fixtures.ActivityName, Namespace: fixtures.Namespace, Labels: map[string]string{appv1.LabelActivity: fixtures.ActivityName}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "cron", Controller: new(true)}}}},
			wantCalls: []string{"update activities/status"}, wantPhase: appv1.ActivityPending, wantErr: true,
			wantReason: map[string]string{appv1.ConditionStalled: appv1.ReasonResourceExists},
			wantEvents: []string{fixtures.Warning(appv1.ReasonResourceExists, "Job default/sleep-once already exists and is not controlled by Activity sleep-once; it is left untouched")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			act := tc.act
			if tc.gone {
				act = nil
			}
			f := newActivityFixture(t, act, tc.job, tc.apiOnly...)
			kubeClient, appClient := f.kubeClient, f.appClient
			cached := tc.act.DeepCopy()

			if err := f.sync(); (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want an error: %v", err, tc.wantErr)
			}
			fixtures.CheckEqual(t, "calls", tc.wantCalls, f.calls())
			fixtures.CheckEvents(t, tc.wantEvents, fixtures.DrainEvents(f.recorder))
			fixtures.CheckEqual(t, "the cached Activity", cached, tc.act)
			if slices.Contains(tc.wantCalls, "patch jobs") {
				job, err := kubeClient.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), fixtures.Namespace, fixtures.ActivityName)
				if err != nil {
					t.Fatal(err)
				}
				if f := job.(*batchv1.Job).Finalizers; !slices.Equal(f, []string{"someone/else"}) {
					t.Errorf("the Job's finalizers after its release: %v, want only someone else's", f)
				}
			}
			if tc.wantPhase == "" {
				return
			}
			got, err := appClient.Tracker().Get(appv1.SchemeGroupVersion.WithResource("activities"), fixtures.Namespace, fixtures.ActivityName)
			if err != nil {
				t.Fatal(err)
			}
			st := got.(*appv1.Activity).Status
			if st.Prosta != tc.wantPhase || st.ObservedGeneration != 1 {
				t.Errorf("prosta %q (generation %d), want %q", st.Prosta, st.ObservedGeneration, tc.wantPhase)
			}
			fixtures.CheckEqual(t, "exit code", tc.wantExit, st.ExitCode)
			trueReasons := map[string]string{}
			for _, cond := range st.Conditions {
				if cond.Status == metav1.ConditionTrue {
					trueReasons[cond.Type] = cond.Reason
				}
			}
			fixtures.CheckEqual(t, "True conditions and their reasons", tc.wantReason, trueReasons)
			if (tc.wantPhase == appv1.ActivitySucceeded || tc.wantPhase == appv1.ActivityFailed) && meta.IsStatusConditionTrue(st.Conditions, appv1.ConditionReconciling) {
				t.Error("a finished run is still Reconciling")
			}
		})
	}
}

// TestSyncActivityWritesNothingInLine: a run in progress whose status says
// so already makes no call.
func TestSyncActivityWritesNothingInLine(t *testing.T) {
	job := liveJob(batchv1.JobStatus{StartTime: &started, Active: 1, Ready: new(int32(1))})
	act := fixtures.Activity()
	act.Status = newActivityStatus(act, jobRun{job: job}, nil)
	f := newActivityFixture(t, act, job)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if calls := f.calls(); len(calls) > 0 {
		t.Errorf("calls in steady state: %v", calls)
	}
}

// TestSyncActivityWaitsForItsOwnStatus: a sync that reads the Activity from
// the cache before the controller's own last status write reached it makes
// no call, and is retried as a stale view.
func TestSyncActivityWaitsForItsOwnStatus(t *testing.T) {
	job := liveJob(batchv1.JobStatus{StartTime: &started, Active: 1, Ready: new(int32(1))})
	f := newActivityFixture(t, fixtures.Activity(), job)
	f.appClient.PrependReactor("update", "activities", fixtures.NewStatusVersion)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	n := len(f.calls())
	if !slices.ContainsFunc(f.calls(), func(c string) bool { return strings.Contains(c, "activities/status") }) {
		t.Fatalf("the first sync wrote no status: %v", f.calls())
	}
	// The cache still holds the version the status write replaced.
	if err := f.sync(); !syncerr.IsStale(err) {
		t.Errorf("a sync of the Activity before its own status write: %v, want a stale view", err)
	}
	if calls := f.calls()[n:]; len(calls) > 0 {
		t.Errorf("calls of a sync on a stale Activity: %v", calls)
	}
}

// TestReleaseJobOnce: a Job released is not patched again by a sync that
// runs before the watch brings the change; once the cache shows it, the
// record goes.
func TestReleaseJobOnce(t *testing.T) {
	act := fixtures.Activity()
	act.Status = appv1.ActivityStatus{ObservedGeneration: 1, Prosta: appv1.ActivitySucceeded}
	job := liveJob(batchv1.JobStatus{Succeeded: 1})
	f := newActivityFixture(t, act, job)
	for range 2 {
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
	}
	if calls := f.calls(); len(calls) != 1 {
		t.Errorf("%d calls for one release: %v", len(calls), calls)
	}
	cacheJob(t, f.jobs, released(job.DeepCopy()))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.c.released.Load(activityKey); ok {
		t.Error("the release is still remembered once the cache shows it")
	}
}
