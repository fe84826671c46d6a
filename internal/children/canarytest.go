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

package children

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// A canary's test (spec.canary.steps[].tests[]) runs as an Activity the
// AppService owns: the Activity's controller runs it once as a Job and
// records its exit code and its log's last lines, and the AppService's
// canary reads its status (docs/design.md, "A canary's tests are
// Activities"). Its spec is the test's, with the canary's address in its
// environment; an Activity's spec cannot change, so that what "differs"
// here is the labels only.

// testNameChars are the characters of a test Activity's name's suffix:
// those of k8s.io/apimachinery's rand.SafeEncodeString, with no vowel
// (no word), and no 0, 1 or 3 (none read as a letter).
const testNameChars = "bcdfghjklmnpqrstvwxz2456789"

// TestActivityName is the name of the Activity that runs the test named
// test of the step of index step of the canary of template hash, begun at
// stepStart (status.canary.stepStartTime, to the second, as the status
// keeps it): the AppService's name and six characters of their digest,
// so that it fits in 63 with a name of 56 (the most with spec.canary). A
// restart that decides again from the same status gives the same name,
// and the Activity already made is found; a retried canary, or the same
// template's next one, begins its steps at another time, and runs its
// tests anew.
func TestActivityName(as *appv1.AppService, hash string, step int32, test string, stepStart metav1.Time) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d/%s/%d", hash, step, test, stepStart.Unix())
	sum := h.Sum32()
	var b strings.Builder
	for range 6 {
		b.WriteByte(testNameChars[sum%uint32(len(testNameChars))])
		sum /= uint32(len(testNameChars))
	}
	return as.Name + "-" + b.String()
}

// CanaryTestEnv is the environment a canary's test gets, before its own
// envs (which win over it, name by name): where the canary and the stable
// version answer (CANARY_URL and STABLE_URL, http:// their Service's
// cluster DNS name and first port; unset without ports), the AppService
// and its namespace, and the step.
func CanaryTestEnv(as *appv1.AppService, step, weight int32) []string {
	env := []string{
		"APPSERVICE=" + as.Name,
		"NAMESPACE=" + as.Namespace,
		"CANARY_NAME=" + CanaryName(as),
		"CANARY_STEP=" + strconv.Itoa(int(step)+1),
		"CANARY_WEIGHT=" + strconv.Itoa(int(weight)),
	}
	if len(as.Spec.Ports) > 0 {
		port := as.Spec.Ports[0].Port
		env = append(env,
			fmt.Sprintf("CANARY_URL=http://%s.%s.svc:%d", CanaryName(as), as.Namespace, port),
			fmt.Sprintf("STABLE_URL=http://%s.%s.svc:%d", as.Name, as.Namespace, port))
	}
	return env
}

// NewCanaryTest returns the Activity that runs test (its command with the
// placeholders already filled in) as name, for the step of index step and
// weight.
func NewCanaryTest(as *appv1.AppService, test *appv1.CanaryTest, name string, step, weight int32, command string) *appv1.Activity {
	deadline := int64(test.DeadlineSeconds)
	if deadline <= 0 {
		deadline = 600 // the CRD's default, for a spec the API server has not defaulted
	}
	return &appv1.Activity{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       as.Namespace,
			Labels:          CanaryTestLabels(as, test.Name),
			Annotations:     map[string]string{appv1.AnnotationCanaryStep: strconv.Itoa(int(step) + 1)},
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: appv1.ActivitySpec{
			Command:               command,
			Image:                 test.Image,
			Envs:                  mergeEnvs(CanaryTestEnv(as, step, weight), test.Envs),
			Resources:             *test.Resources.DeepCopy(),
			ServiceAccountName:    test.ServiceAccountName,
			ActiveDeadlineSeconds: &deadline,
		},
	}
}

// CanaryTestLabels are the labels of a test's Activity: LabelAppService,
// which the controller claims it with, and LabelCanaryTest, the test.
func CanaryTestLabels(as *appv1.AppService, test string) map[string]string {
	return mergeLabels(SelectorLabels(as), map[string]string{appv1.LabelCanaryTest: test})
}

// mergeEnvs is base's NAME=value strings with those of over set over
// them, name by name: over's in their order after base's that remain.
func mergeEnvs(base, over []string) []string {
	name := func(e string) string { n, _, _ := strings.Cut(e, "="); return n }
	set := map[string]bool{}
	for _, e := range over {
		set[name(e)] = true
	}
	out := make([]string, 0, len(base)+len(over))
	for _, e := range base {
		if !set[name(e)] {
			out = append(out, e)
		}
	}
	return append(out, over...)
}

// UpdateActivity returns a copy of live with the labels desired has set,
// and the names of the fields that changed; nil when nothing needs to
// change. An Activity's spec cannot change: a run is a run. live is never
// modified.
func UpdateActivity(live, desired *appv1.Activity) (*appv1.Activity, []string) {
	out := live.DeepCopy()
	return updated(out, ownedLabels(&out.ObjectMeta, desired.Labels))
}
