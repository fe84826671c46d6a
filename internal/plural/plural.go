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

// Package plural spells a count and its noun in the messages users read
// (conditions, Events): "1 replica", "2 replicas", never "1 times".
//
// It imports nothing of this repository.
package plural

import "strconv"

// Count is n and the noun one, with an s unless n is 1: "1 time",
// "3 times". For a noun whose plural is not one+"s", use Of.
func Count[N ~int | ~int32 | ~int64](n N, one string) string {
	return Of(n, one, one+"s")
}

// Of is n and one or many: Of(2, "query", "queries") is "2 queries".
func Of[N ~int | ~int32 | ~int64](n N, one, many string) string {
	return strconv.FormatInt(int64(n), 10) + " " + Agree(n, one, many)
}

// Agree is one when n is 1, else many: a verb that agrees with a count,
// "1 of 2 replicas " + Agree(1, "runs", "run").
func Agree[N ~int | ~int32 | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
