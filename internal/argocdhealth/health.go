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

// Package argocdhealth runs an Argo CD health check, a Lua script such as
// artifacts/argocd/health.lua, on an object the way Argo CD runs the
// scripts of resource.customizations.health: with gopher-lua (the
// interpreter Argo CD embeds), only the base, package and table libraries
// open, the object as the global obj, a second to finish, and a table
// {status, message} back. Only tests import it.
//
// It imports nothing of this repository.
package argocdhealth

import (
	"context"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// The statuses a health check may return (Argo CD's health.HealthStatusCode).
var statuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// Status is what a health check says of an object.
type Status struct {
	Status  string
	Message string
}

// Evaluate runs script on obj, an object as unstructured JSON decodes it.
func Evaluate(script string, obj map[string]any) (Status, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Status{}, err
	}
	t, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Status{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	st := Status{Status: lua.LVAsString(t.RawGetString("status")), Message: lua.LVAsString(t.RawGetString("message"))}
	if !statuses[st.Status] {
		return st, fmt.Errorf("the script returned the status %q, which Argo CD does not know", st.Status)
	}
	return st, nil
}

// toLua converts a value of unstructured JSON to Lua as Argo CD does:
// objects and arrays to tables (arrays from index 1), numbers to numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	return lua.LString(fmt.Sprint(v))
}
