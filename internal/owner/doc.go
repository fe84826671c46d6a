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

// Package owner is what every kind of owner this controller has (the
// AppService, the Activity) shares between its informers and its sync, after
// kube-controller-manager's pkg/controller (controller_utils.go,
// controller_ref_manager.go):
//
//   - the one claiming path: which object of a child's name is the owner's
//     to manage, adopted or released as ControllerRefManager does
//     (claim.go);
//   - one sync of one child, the same for every child kind: create, claim,
//     update only the owned fields, delete what the owner no longer asks
//     for; and the children's caches, indexed by their controller
//     (child.go);
//   - the children's events mapped to their owners' keys, a kind's
//     workqueue and its pool of workers (queue.go);
//   - the change log of one sync, which becomes its Events (events.go);
//   - the kinds of a sync's errors, and how each is retried and reported
//     (errors.go).
//
// An owner kind describes itself with a Kind (its GroupVersionKind and the
// label that names it on its children) and each child kind with a
// ChildKind; the rest is here, written once.
//
// It may import client-go, apimachinery and the API types, the API's
// package (pkg/apis/app/v1), internal/children (the children's cached form
// and their patches), internal/syncerr (what a sync's errors mean) and
// internal/metrics. It never imports the root
// (the AppService's controller) or an owner kind's package such as
// internal/activity: those import it.
package owner

// FieldManager names the controller in the managedFields of every object
// it creates, updates or patches, so that users can tell who wrote what.
const FieldManager = "appservice-controller"
