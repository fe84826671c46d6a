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

package owner

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// NotOurs reports an object of the child's name that this owner (of
// Kind) does not control. It is never modified.
func NotOurs(Kind Kind, owner, obj metav1.Object, kind string) error {
	return &syncerr.ChildError{
		Reason: appv1.ReasonResourceExists,
		Err: fmt.Errorf("%s %s/%s already exists and is not controlled by %s %s; it is left untouched",
			kind, obj.GetNamespace(), obj.GetName(), Kind.GVK.Kind, owner.GetName()),
	}
}
