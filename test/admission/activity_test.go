//go:build e2e

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

package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// TestActivityAdmissionProperty: the same property for the Activity. For
// every generated Activity, the builder does not panic; if the CRD admits
// it, the API server accepts the Job built from the admitted object
// (dry-run), and UpdateJob finds nothing to change in what it made of it;
// if the CRD refuses it, the refusal names the field.
func TestActivityAdmissionProperty(t *testing.T) {
	ctx := context.Background()
	kube, apps := startAPIServer(t)
	const ns = "activities"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	outcomes := map[string]int{}
	const n = 600
	for i := range n {
		act := generateActivity(&specRand{Rand: rng, badOdds: pick(&specRand{Rand: rng}, 0, 4, 12)})
		act.Namespace = ns
		outcome, err := checkActivity(ctx, kube, apps, act)
		outcomes[outcome]++
		if err != nil {
			spec, _ := json.Marshal(act)
			t.Errorf("case %d: %v\nactivity: %s", i, err, spec)
		}
	}
	t.Logf("%d Activities: %v", n, outcomes)
	if outcomes["admitted"] < n/5 || outcomes["refused"] < n/5 {
		t.Errorf("the generator is lopsided (%v): it must produce both kinds of Activity", outcomes)
	}
}

func checkActivity(ctx context.Context, kube kubernetes.Interface, apps clientset.Interface, act *appv1.Activity) (string, error) {
	if err := buildJob(act); err != nil {
		return "panic", err
	}
	admitted, err := apps.AppV1().Activities(act.Namespace).Create(ctx, act, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		if !apierrors.IsInvalid(err) {
			return "error", fmt.Errorf("creating the Activity: %w", err)
		}
		if !strings.Contains(err.Error(), "spec.") && !strings.Contains(err.Error(), "metadata.name") {
			return "refused", fmt.Errorf("refused without naming the field: %v", err)
		}
		return "refused", nil
	}
	admitted.UID = "00000000-0000-4000-8000-000000000002" // dry-run leaves it empty
	if err := buildJob(admitted); err != nil {
		return "panic", err
	}
	if err := dryRunChild(ctx, "Job", kube.BatchV1().Jobs(act.Namespace).Create, children.NewJob(admitted), children.UpdateJob); err != nil {
		return "admitted", fmt.Errorf("admitted, but %v", err)
	}
	return "admitted", nil
}

// buildJob runs the Job's builder and diff on act and turns a panic into an
// error.
func buildJob(act *appv1.Activity) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("builder panicked: %v", r)
		}
	}()
	j := children.NewJob(act)
	children.UpdateJob(j, children.NewJob(act))
	return nil
}

// generateActivity draws an Activity's name and fields near the edges the
// API server checks in a Job and its Pod: names, user IDs, paths, env var
// names and values, the deadline and TTL, resources and the ServiceAccount;
// now and then (bad) from values it refuses.
func generateActivity(r *specRand) *appv1.Activity {
	act := &appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: pick(r, "run", "sleep-once", "a", "0-migrate", strings.Repeat("x", 63))}}
	if bad(r) {
		act.Name = pick(r, "Run", "run.once", "-run", "run-", strings.Repeat("x", 64), "run_once")
	}
	s := &act.Spec
	s.Command = pick(r, "true", "echo hello; sleep 1", "exit 3", "printf '%s\\n' \"$GREETING\"", "line one\nline two", "echo 你好", strings.Repeat("x", 16384))
	if bad(r) {
		s.Command = ""
	}
	if r.IntN(2) == 0 {
		s.Image = pick(r, "busybox:1.37", "ubuntu", "registry.example.com:5000/tools/sh@sha256:"+strings.Repeat("ab", 32))
		if bad(r) {
			s.Image = pick(r, "busy box", "busybox\n")
		}
	}
	if r.IntN(2) == 0 {
		s.Host = pick(r, "kwok-node-0", "ip-10-0-0-1.ec2.internal", "n", "Node_1", strings.Repeat("n", 63))
		if bad(r) {
			s.Host = pick(r, "node 1", "-node", "node-", "node/1", strings.Repeat("n", 64), "nöde")
		}
	}
	if r.IntN(2) == 0 {
		s.ExecUser = pick(r, "0", "1000", "1000:3000", "0:0", "2147483647", "65534:65534", "007")
		if bad(r) {
			s.ExecUser = pick(r, "root", "app:app", "1000:", ":1000", "2147483648", "1:4294967296", "-1", "1:2:3", "1e3", " 1000", "99999999999999999999")
		}
	}
	if r.IntN(2) == 0 {
		s.ExecCwd = pick(r, "/", "/tmp", "/srv/my app", "/数据", "/"+strings.Repeat("d", 4000))
		if bad(r) {
			s.ExecCwd = pick(r, "tmp", "./work", "~", " /tmp")
		}
	}
	for range r.IntN(4) {
		name := pick(r, "A", "PATH", "my.var", "with space", "_x", "a-b", "JAVA_OPTS", "1ST", "~!@#$%^&*()")
		value := pick(r, "", "x", "a=b", "multi\nline", "值", strings.Repeat("v", 900))
		s.Envs = append(s.Envs, name+"="+value)
	}
	s.Envs = dedupeNames(s.Envs)
	if bad(r) {
		switch r.IntN(5) {
		case 0:
			s.Envs = append(s.Envs, "NO_VALUE")
		case 1:
			s.Envs = append(s.Envs, "=value")
		case 2:
			s.Envs = append(s.Envs, "TWICE=1", "TWICE=2")
		case 3:
			s.Envs = append(s.Envs, "TAB\tNAME=1")
		default:
			s.Envs = append(s.Envs, "LONG="+strings.Repeat("v", 1100))
		}
	}
	if r.IntN(3) == 0 {
		s.ActiveDeadlineSeconds = new(pick(r, int64(1), 60, 86400, 1<<62))
		if bad(r) {
			s.ActiveDeadlineSeconds = new(pick(r, int64(0), -1))
		}
	}
	if r.IntN(3) == 0 {
		s.TTLSecondsAfterFinished = new(pick(r, int32(0), 100, 2147483647))
		if bad(r) {
			s.TTLSecondsAfterFinished = new(int32(-1))
		}
	}
	// Drawn last, so that the draws above keep the values they had.
	if r.IntN(3) == 0 {
		// The AppService's resources' pools: the same rules.
		s.Resources = genResources(r)
	}
	if r.IntN(3) == 0 {
		s.ServiceAccountName = pick(r, "default", "migrator", "ci.runner", strings.Repeat("s", 253))
		if bad(r) {
			s.ServiceAccountName = pick(r, "Migrator", "svc_acct", "-a", "a.", strings.Repeat("s", 254))
		}
	}
	return act
}

// dedupeNames keeps the first entry of each name: a name twice is a bad
// value, drawn on purpose.
func dedupeNames(envs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range envs {
		name, _, _ := strings.Cut(e, "=")
		if !seen[name] {
			seen[name] = true
			out = append(out, e)
		}
	}
	return out
}
