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

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The manifests the tour applies, from the repository's root (make demo
// runs there).
const (
	seedManifest  = "test/e2e/testdata/seed-appservice.yaml"
	otherManifest = "hack/demo/manifests/other-app.yaml"
	badManifest   = "hack/demo/manifests/bad-appservice.yaml"
	// The tutorial's Activity, as artifacts/examples ships it.
	activityManifest = "artifacts/examples/tutorial-activity.yaml"
	// The canary's example, which needs the Gateway API.
	canaryManifest = "artifacts/examples/canary/shop.yaml"
	// The canary with an analysis, which needs Prometheus besides.
	analysisManifest = "artifacts/examples/canary/checkout.yaml"
	// The release driven by hand: a gate, testers, a rollback window.
	releaseManifest = "artifacts/examples/canary/storefront.yaml"
	// Shadow traffic and sticky users.
	shadowManifest = "artifacts/examples/canary/shadow.yaml"
	// A fleet's judge, and an AppService that names it.
	templateManifest = "artifacts/examples/analysis-templates/success-rate.yaml"
	cartManifest     = "hack/demo/manifests/cart.yaml"
)

// routeWeightColumns prints an HTTPRoute's first rule's backends and their
// weights, a line per version with --watch (kubectl get --watch with a
// jsonpath range stops after the first change).
const routeWeightColumns = "custom-columns=BACKENDS:.spec.rules[0].backendRefs[*].name,WEIGHTS:.spec.rules[0].backendRefs[*].weight"

// routeRules prints each rule of an HTTPRoute: the headers it matches, and
// its backends with their weights.
const routeRules = `jsonpath={range .spec.rules[*]}{.matches[0].headers[*].name}{" -> "}{range .backendRefs[*]}{.name}={.weight} {end}{"\n"}{end}`

// routeNamedRules prints each rule of an HTTPRoute or a GRPCRoute: its
// name, its filters' types and its backends with their weights.
const routeNamedRules = `jsonpath={range .spec.rules[*]}{.name}{": "}{range .filters[*]}{.type}{" "}{end}` +
	`{"-> "}{range .backendRefs[*]}{.name}={.weight} {end}{"\n"}{end}`

// routeWeights prints an HTTPRoute's backends and their weights.
const routeWeights = `jsonpath={range .spec.rules[0].backendRefs[*]}{.name}={.weight} {end}{"\n"}`

// The objects the tour makes; the first step checks none is left from an
// earlier tour, and the last deletes them.
var tourObjects = []string{"appservice/nginx-app", "appservice/other-app", "appservice/bad-app", "deployment/other-app", "configmap/nginx-settings",
	"activity/sleep-once", "appservice/shop", "appservice/checkout", "appservice/storefront", "appservice/cart", "appservice/shadow"}

// What steps that need the tour's own controller say when they are skipped.
var (
	readsMetrics = text{"it reads the tour's own controller, and this tour uses one already running",
		"这一步读取演示自己运行的控制器，而这次演示用的是已经在运行的控制器"}
	localReceiver = text{"the receiver runs on this machine, which a controller in a cluster may not reach",
		"接收方运行在本机，集群里的控制器未必能访问到它"}
	setsPrometheus = text{"the analysis measures what the Prometheus of the controller already running scrapes, which the tour cannot set",
		"分析测量的是已在运行的控制器所用 Prometheus 抓取的数据，演示无法设定它们"}
)

// tourSteps is the tour, in order. Each step's check holds only if the
// commands before it did what its narration says.
func tourSteps() []step {
	return []step{{
		title: text{"The API the controller brought", "控制器带来的 API"},
		say: text{
			"At start-up the controller installed its CustomResourceDefinition and waited until it was established.\n" +
				"kubectl now knows the AppService kind, its short name appsvc and every field's documentation.",
			"控制器启动时自己安装了 CRD，并等到它 Established 才开始工作。\n" +
				"现在 kubectl 认识了 AppService 这个类型、它的简称 appsvc，以及每个字段的文档。",
		},
		before: func(ctx context.Context, t *tour) error {
			// The API server publishes a new kind's OpenAPI, which
			// explain reads, a few seconds after the CRD is established.
			return t.eventually(ctx, func() (bool, string, error) {
				out, err := t.run(ctx, "explain", "appservice.spec.size")
				return err == nil, strings.TrimSpace(out), nil
			})
		},
		cmds: []command{
			kubectl("wait", "--for=condition=Established", "crd/appservices.app.example.com", "--timeout=1m"),
			kubectl("explain", "appservice.spec.size"),
		},
		expect: text{"the CRD is established, and nothing is left from an earlier tour", "CRD 已就绪，也没有上一次演示留下的对象"},
		check: func(ctx context.Context, t *tour) error {
			for _, o := range tourObjects {
				if name, err := t.get(ctx, o, "{.metadata.name}"); err != nil || name != "" {
					return fmt.Errorf("%s exists (left from an earlier tour?): kubectl delete %s; or %v", o, o, err)
				}
			}
			return nil
		},
	}, {
		title: text{"Apply the manifest users start from", "apply 用户最熟悉的那份清单"},
		say: text{
			"One short object: 2 replicas of nginx:1.7.9 behind a NodePort Service on 30002.\n" +
				"The controller creates the Deployment and the Service, then reports their state in the AppService's status.",
			"一个很短的对象：2 个 nginx:1.7.9 副本，前面是一个 NodePort 为 30002 的 Service。\n" +
				"控制器据此创建 Deployment 和 Service，再把它们的状态写回 AppService 的 status。",
		},
		cmds: []command{
			kubectl("apply", "-f", seedManifest),
			kubectl("wait", "--for=condition=Available", "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "appsvc", "nginx-app"),
		},
		expect: text{"nginx-app is Available with 2 ready replicas", "nginx-app 已 Available，2 个副本就绪"},
		check: func(ctx context.Context, t *tour) error {
			return t.equals(ctx, "appservice/nginx-app", "{.status.readyReplicas}", "2")
		},
	}, {
		title: text{"What it made", "控制器创建了什么"},
		say: text{
			"Every child carries the label app.example.com/appservice=nginx-app (the controller's caches watch only\n" +
				"labelled objects) and a controller owner reference to the AppService.",
			"每个子对象都带着标签 app.example.com/appservice=nginx-app（控制器的缓存只 watch 带这个标签的对象），\n" +
				"以及指向该 AppService 的 controller ownerReference。",
		},
		cmds: []command{
			kubectl("get", "deploy,svc,pods", "-l", "app.example.com/appservice=nginx-app"),
			kubectl("get", "deploy", "nginx-app", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}"+
				" controller={.metadata.ownerReferences[0].controller}{\"\\n\"}"),
		},
		expect: text{
			"a Deployment and a NodePort Service on 30002, both controlled by the AppService",
			"一个 Deployment 和一个 NodePort 30002 的 Service，都由这个 AppService 控制",
		},
		check: func(ctx context.Context, t *tour) error {
			for _, o := range []string{"deployment/nginx-app", "service/nginx-app"} {
				owner := "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}"
				if err := t.equals(ctx, o, owner, "AppService/nginx-app/true"); err != nil {
					return err
				}
			}
			return t.equals(ctx, "service/nginx-app", "{.spec.type}/{.spec.ports[0].nodePort}", "NodePort/30002")
		},
	}, {
		title: text{"Status, conditions and Events", "status、condition 与 Event"},
		say: text{
			"describe shows the status the controller writes (only when it changes) and the Events it sent:\n" +
				"one per sync and kind of change, naming the children.",
			"describe 展示控制器写入的 status（只在有变化时写）和它发出的 Event：\n" +
				"每次同步、每种变化只发一条，并写明是哪些子对象。",
		},
		cmds: []command{kubectl("describe", "appsvc", "nginx-app")},
		expect: text{
			"Available=True, Degraded=False, and a Created Event naming the Deployment and the Service",
			"Available=True、Degraded=False，还有一条写明 Deployment 与 Service 的 Created Event",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.equals(ctx, "appservice/nginx-app", `{.status.conditions[?(@.type=="Available")].status}`, "True"); err != nil {
				return err
			}
			if err := t.equals(ctx, "appservice/nginx-app", `{.status.conditions[?(@.type=="Degraded")].status}`, "False"); err != nil {
				return err
			}
			return t.event(ctx, "nginx-app", "Created", "Created Deployment nginx-app, Service nginx-app")
		},
	}, {
		title: text{"Ready, as GitOps tools read it", "Ready：GitOps 工具读到的健康状态"},
		say: text{
			"Ready, Reconciling and Stalled are the conditions kstatus reads, and with it Flux and kpt;\n" +
				"Argo CD reads them through artifacts/argocd/health.lua. Ready is True once every replica runs the current template.",
			"Ready、Reconciling 和 Stalled 是 kstatus 读取的 condition，Flux 和 kpt 也经由它读取；\n" +
				"Argo CD 通过 artifacts/argocd/health.lua 读取它们。每个副本都运行当前模板之后，Ready 才为 True。",
		},
		cmds: []command{
			kubectl("wait", "--for=condition=Ready", "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "appsvc", "nginx-app", "-o",
				`jsonpath={range .status.conditions[*]}{.type}={.status} ({.reason}){"\n"}{end}`),
		},
		expect: text{"Ready=True (RolloutComplete), Reconciling=False, Stalled=False", "已就绪：Ready=True（RolloutComplete），Reconciling=False，Stalled=False"},
		check: func(ctx context.Context, t *tour) error {
			for typ, want := range map[string]string{"Ready": "True/RolloutComplete", "Reconciling": "False/RolloutComplete", "Stalled": "False/AsExpected"} {
				path := `{.status.conditions[?(@.type=="` + typ + `")].status}/{.status.conditions[?(@.type=="` + typ + `")].reason}`
				if err := t.equals(ctx, "appservice/nginx-app", path, want); err != nil {
					return err
				}
			}
			return nil
		},
	}, {
		title: text{"Scale it", "扩容"},
		say: text{
			"AppService has the scale subresource, so kubectl scale (and a HorizontalPodAutoscaler) work on it.\n" +
				"The controller carries the new size to the Deployment.",
			"AppService 开启了 scale 子资源，所以 kubectl scale（以及 HPA）可以直接作用于它；\n" +
				"控制器把新的副本数同步到 Deployment。",
		},
		cmds: []command{
			kubectl("scale", "appsvc", "nginx-app", "--replicas=3"),
			kubectl("wait", "--for=jsonpath={.status.readyReplicas}=3", "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "appsvc", "nginx-app"),
		},
		expect: text{"size 3; the Deployment has 3 replicas, all ready", "size 为 3；Deployment 有 3 个副本，全部就绪"},
		check: func(ctx context.Context, t *tour) error {
			if err := t.equals(ctx, "appservice/nginx-app", "{.spec.size}", "3"); err != nil {
				return err
			}
			return t.equals(ctx, "deployment/nginx-app", "{.spec.replicas}", "3")
		},
	}, {
		title: text{"A new image", "换一个镜像"},
		say: text{
			"Change the spec and the Deployment follows, with its usual rolling update.\n" +
				"The Updated Event says which fields changed.",
			"修改 spec，Deployment 随之按常规滚动更新；\n" +
				"Updated Event 会写明改了哪些字段。",
		},
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p", `{"spec":{"image":"nginx:1.27"}}`),
			kubectl("wait", "--for=jsonpath={.spec.template.spec.containers[0].image}=nginx:1.27", "deploy/nginx-app", "--timeout=1m"),
			kubectl("rollout", "status", "deploy/nginx-app", "--timeout=2m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=nginx-app,reason=Updated"),
		},
		expect: text{
			"the Deployment rolled out nginx:1.27, and an Updated Event says the image changed",
			"Deployment 已滚动到 nginx:1.27，Updated Event 写明改的是 image",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.equals(ctx, "deployment/nginx-app", "{.status.updatedReplicas}/{.status.availableReplicas}", "3/3"); err != nil {
				return err
			}
			return t.event(ctx, "nginx-app", "Updated", "Updated Deployment nginx-app: image")
		},
	}, {
		title: text{"A config change rolls the Pods", "配置一改，Pod 就滚动更新"},
		say: text{
			"Env vars never change in a running Pod. With rolloutOnConfigChange the controller keeps a digest of every\n" +
				"ConfigMap and Secret the Pods read on the Pod template: edit the data and the Deployment rolls out.",
			"运行中的 Pod 里环境变量永远不会变。打开 rolloutOnConfigChange 后，控制器把 Pod 读取的每个 ConfigMap 和 Secret\n" +
				"的摘要写在 Pod 模板上：改了数据，Deployment 就会滚动更新。",
		},
		cmds: []command{
			kubectl("create", "configmap", "nginx-settings", "--from-literal=LOG_LEVEL=info"),
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p",
				`{"spec":{"rolloutOnConfigChange":true,"envFrom":[{"configMapRef":{"name":"nginx-settings"}}]}}`),
			kubectl("rollout", "status", "deploy/nginx-app", "--timeout=2m"),
			kubectl("patch", "configmap", "nginx-settings", "--type=merge", "-p", `{"data":{"LOG_LEVEL":"debug"}}`),
			kubectl("rollout", "status", "deploy/nginx-app", "--timeout=2m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=nginx-app,reason=Updated"),
		},
		expect: text{
			"the ConfigMap's edit rolled the Pods, and an Updated Event names it",
			"ConfigMap 的修改让 Pod 滚动更新了，Updated Event 写明了是哪个 ConfigMap",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.event(ctx, "nginx-app", "Updated", "config of ConfigMap nginx-settings"); err != nil {
				return err
			}
			return t.eventually(ctx, func() (bool, string, error) {
				out, err := t.get(ctx, "deployment/nginx-app", "{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas}")
				return err == nil && out == "3/3/3", out, err
			})
		},
	}, {
		title: text{"A sidecar beside the app", "给应用配一个 sidecar"},
		say: text{
			"A sidecar runs beside the app for the Pod's whole life: here one tails nginx's access log from an emptyDir\n" +
				"they share. It is a native sidecar, an init container with restartPolicy Always, started before the app.",
			"sidecar 在 Pod 的整个生命周期里与应用并行运行：这里的 sidecar 从两者共享的 emptyDir 中跟踪 nginx 的访问日志。\n" +
				"它是原生 sidecar，即带 restartPolicy Always 的 init 容器，先于应用启动。",
		},
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p",
				`{"spec":{"volumes":[{"name":"logs","emptyDir":{}}],"volumeMounts":[{"name":"logs","mountPath":"/var/log/nginx"}],`+
					`"sidecars":[{"name":"log-tail","image":"busybox:1.36","command":["sh","-c","tail -F /var/log/nginx/access.log"],`+
					`"volumeMounts":[{"name":"logs","mountPath":"/var/log/nginx","readOnly":true}]}]}}`),
			kubectl("rollout", "status", "deploy/nginx-app", "--timeout=2m"),
			kubectl("get", "deploy", "nginx-app", "-o",
				`jsonpath={range .spec.template.spec.initContainers[*]}{.name} restartPolicy={.restartPolicy}{"\n"}{end}`),
		},
		expect: text{
			"the Pod template has the sidecar log-tail with restartPolicy Always, and the rollout finished",
			"Pod 模板中有了 restartPolicy 为 Always 的 sidecar log-tail，滚动更新已完成",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.event(ctx, "nginx-app", "Updated", "sidecar log-tail added"); err != nil {
				return err
			}
			// The first init container, its restart policy, and the rollout.
			return t.eventually(ctx, func() (bool, string, error) {
				out, err := t.get(ctx, "deployment/nginx-app", "{.spec.template.spec.initContainers[0].name}/{.spec.template.spec.initContainers[0].restartPolicy}/"+
					"{.status.updatedReplicas}/{.status.availableReplicas}/{.status.replicas}")
				return err == nil && out == "log-tail/Always/3/3/3", out, err
			})
		},
	}, {
		title: text{"Delete the Service", "删掉 Service"},
		say: text{
			"The Service's deletion reaches the controller through its watch; the next sync creates it again,\n" +
				"with the same node port.",
			"Service 被删除的事件经 watch 到达控制器，下一次同步就把它重新创建出来，\n" +
				"NodePort 不变。",
		},
		before: mark("uid", "service/nginx-app", "{.metadata.uid}"),
		cmds: []command{
			kubectl("delete", "svc", "nginx-app"),
			kubectl("wait", "--for=create", "svc/nginx-app", "--timeout=1m"),
			kubectl("get", "svc", "nginx-app"),
		},
		expect: text{"a new Service (a new UID) on node port 30002", "一个新的 Service（UID 变了），NodePort 仍是 30002"},
		check: func(ctx context.Context, t *tour) error {
			uid, err := t.get(ctx, "service/nginx-app", "{.metadata.uid}")
			if err != nil {
				return err
			}
			if uid == "" || uid == t.marks["uid"] {
				return fmt.Errorf("the Service's UID is %q, before the deletion %q", uid, t.marks["uid"])
			}
			return t.equals(ctx, "service/nginx-app", "{.spec.ports[0].nodePort}", "30002")
		},
	}, {
		title: text{"Suspend it, and resume", "暂停，再恢复"},
		say: text{
			"spec.suspend stops the app without deleting it: the Deployment goes to 0 replicas, and the Service keeps\n" +
				"its cluster IP and node port. Set it back to false and the Pods return.",
			"spec.suspend 让应用停下来而不删除它：Deployment 缩到 0 个副本，Service 保留它的 cluster IP 和 NodePort。\n" +
				"改回 false，Pod 就回来了。",
		},
		before: mark("service", "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}"),
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p", `{"spec":{"suspend":true}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=Suspended`, "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "appsvc,deploy,svc", "nginx-app"),
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p", `{"spec":{"suspend":false}}`),
			kubectl("wait", "--for=jsonpath={.status.readyReplicas}=3", "appsvc/nginx-app", "--timeout=2m"),
		},
		expect: text{
			"suspended at 0 replicas with the same Service (UID, cluster IP, node port 30002), then back to 3 ready replicas",
			"暂停时为 0 个副本，Service 不变（UID、cluster IP、NodePort 30002），恢复后又有 3 个就绪副本",
		},
		check: resumedAsBefore,
	}, {
		title: text{"A canary without a route: the Pods' share", "没有路由的金丝雀发布：按 Pod 的份额"},
		say: text{
			"nginx-app has no route: just its NodePort Service. With spec.canary, a new image first runs in a Deployment\n" +
				"nginx-app-canary whose Pods serve behind that same Service, beside the 3 stable ones: 1 of 4 Pods for a 25% step,\n" +
				"then 3 of 6 for 50%. The status and the Events say the share the Pods carry, by Pods; the Service keeps its UID,\n" +
				"cluster IP and node port.",
			"nginx-app 没有路由，只有它的 NodePort Service。设置 spec.canary 后，新镜像先运行在 Deployment nginx-app-canary 中，\n" +
				"它的 Pod 在同一个 Service 后面、与 3 个稳定版 Pod 并列提供服务：25% 的一步是 4 个 Pod 中的 1 个，\n" +
				"50% 是 6 个中的 3 个。status 和 Event 给出的是 Pod 实际承载的份额，注明 by Pods；Service 的 UID、cluster IP 和 NodePort 都不变。",
		},
		before: mark("service", "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}"),
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p",
				`{"spec":{"image":"nginx:1.28","canary":{"steps":[{"weight":25,"pauseSeconds":3},{"weight":50,"pauseSeconds":3},{"weight":100}]}}}`),
			kubectl("wait", "--for=jsonpath={.status.canary.trafficBy}=Pods", "appsvc/nginx-app", "--timeout=1m"),
			kubectl("wait", "--for=jsonpath={.spec.template.spec.containers[0].image}=nginx:1.28", "deploy/nginx-app", "--timeout=2m"),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RolloutComplete`, "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=nginx-app,reason=CanaryStep"),
			kubectl("get", "svc", "nginx-app"),
		},
		expect: text{
			"steps of 25% of the traffic by Pods (1 of 4) and 50% (3 of 6), then promoted: nginx:1.28 on every Pod, the same Service on node port 30002",
			"25% 的流量按 Pod 承载（4 个中的 1 个）、再到 50%（6 个中的 3 个），然后晋升：每个 Pod 都运行 nginx:1.28，Service 不变，NodePort 仍是 30002",
		},
		check: canaryByPods,
	}, {
		title: text{"Test a release before it takes traffic", "发布在承接流量之前先经过测试"},
		say: text{
			"A step may run commands of its own, each once, as an Activity nginx-app owns: a smoke test Before the step's\n" +
				"weight (the canary's Pods join the Service only once it passed) and a load test During it (the step waits for it).\n" +
				"Each gets the canary's address in CANARY_URL; one that exits non-zero aborts the canary.",
			"每一步都可以运行自己的命令，每个只运行一次，作为 nginx-app 拥有的 Activity：在这一步的权重之前（Before）运行冒烟测试\n" +
				"（金丝雀的 Pod 要等它通过才进入 Service），在权重期间（During）运行压测（这一步要等它通过）。\n" +
				"每个测试都从 CANARY_URL 得到金丝雀的地址；以非零退出的测试会中止金丝雀。",
		},
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p", `{"spec":{"image":"nginx:1.29","canary":{"steps":[`+
				`{"weight":25,"tests":[{"name":"smoke","when":"Before","command":"wget -qO /dev/null \"$CANARY_URL/\""}]},`+
				`{"weight":50,"tests":[{"name":"load","when":"During","command":"for i in $(seq 100); do wget -qO /dev/null \"$CANARY_URL/\" || exit 1; done"}]},`+
				`{"weight":100}]}}}`),
			kubectl("wait", "--for=jsonpath={.spec.template.spec.containers[0].image}=nginx:1.29", "deploy/nginx-app", "--timeout=2m"),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RolloutComplete`, "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "appsvc", "nginx-app", "-o",
				`jsonpath={range .status.canary.tests[*]}{.name} (step {.step}): {.phase}, exit {.exitCode}, Activity {.activity}{"\n"}{end}`),
			kubectl("get", "events", "--field-selector", "involvedObject.name=nginx-app,reason=CanaryTest"),
		},
		expect: text{
			"the smoke test passed before step 1's share, the load test during step 2; promoted to nginx:1.29, the tests' Activities kept",
			"冒烟测试在第 1 步的份额之前通过，压测在第 2 步期间通过；晋升为 nginx:1.29，测试的 Activity 保留",
		},
		check: testedRelease,
	}, {
		title: text{"Blue-green: a full-size preview, then one switch", "蓝绿发布：完整规模的预览，然后一次切换"},
		say: text{
			"An app that cannot mix versions: with spec.canary.blueGreen, nginx:1.30 runs in a preview, nginx-app-preview,\n" +
				"with a Service of its own that only its Pods are behind; the users' Service never sees them. At its gate the\n" +
				"preview has 1 Pod; promoted, it grows to 3, and once they are all available one write of the Service's\n" +
				"selector switches the users to them. The old Pods stay at full size for the scale-down delay (5 s here), to\n" +
				"switch back to; then they roll to nginx:1.30 and the Service selects them again.",
			"不能混跑两个版本的应用：设置 spec.canary.blueGreen 后，nginx:1.30 先运行在预览 nginx-app-preview 中，\n" +
				"它有自己的 Service，后面只有它的 Pod；用户的 Service 看不到它们。在关卡处预览只有 1 个 Pod；\n" +
				"晋升后它扩到 3 个，全部可用后，一次改写 Service 的 selector 就把用户切到它们上面。旧 Pod 在缩容延迟\n" +
				"（这里是 5 秒）内保持完整规模，以便切回；之后它们滚动到 nginx:1.30，Service 重新选中它们。",
		},
		before: mark("service", "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}"),
		cmds: []command{
			kubectl("patch", "appsvc", "nginx-app", "--type=merge", "-p",
				`{"spec":{"image":"nginx:1.30","canary":{"steps":[{"weight":0,"gate":true}],"blueGreen":{"previewReplicas":1,"scaleDownDelaySeconds":5}}}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}=CanaryGated`, "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name in (nginx-app, nginx-app-preview)", "-o",
				`custom-columns=SERVICE:.metadata.labels.kubernetes\.io/service-name,PODS:.endpoints[*].targetRef.name`),
			kubectl("appservice", "promote", "nginx-app"),
			kubectl("wait", "--for=jsonpath={.spec.template.spec.containers[0].image}=nginx:1.30", "deploy/nginx-app", "--timeout=2m"),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RolloutComplete`, "appsvc/nginx-app", "--timeout=2m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=nginx-app,reason=CanarySwitched"),
			kubectl("get", "svc", "nginx-app", "-o", "custom-columns=NAME:.metadata.name,NODEPORT:.spec.ports[0].nodePort,SELECTOR:.spec.selector"),
		},
		expect: text{
			"at the gate, nginx-app's endpoints are the old Pods and nginx-app-preview's its 1 Pod; promoted, a Normal Event\n" +
				"CanarySwitched, then nginx:1.30 on every Pod, the preview gone, and the same Service on node port 30002",
			"在关卡处，nginx-app 的端点是旧 Pod，nginx-app-preview 的端点是它的 1 个 Pod；晋升后有一条 Normal Event\n" +
				"CanarySwitched，然后每个 Pod 都运行 nginx:1.30，预览已删除，Service 不变，NodePort 仍是 30002",
		},
		check: blueGreenSwitched,
	}, {
		title: text{"A canary through the route", "经由路由的金丝雀发布"},
		say: text{
			"shop has an HTTPRoute and spec.canary: a new image first gets 10% of the traffic through a Deployment and\n" +
				"Service shop-canary, then 50%, then 100%, each step once its Pods are available and its pause has passed;\n" +
				"then the running Pods roll to it and the route goes back to the one Service. (The Gateway API must be installed:\n" +
				"the local cluster has its CRDs.)",
			"shop 有一个 HTTPRoute 和 spec.canary：新镜像先经由 Deployment 和 Service shop-canary 拿到 10% 的流量，\n" +
				"再到 50%、100%，每一步都要等它的 Pod 可用、暂停时间过去；\n" +
				"然后正在运行的 Pod 滚动到新版本，路由回到唯一的那个 Service。（集群需要装有 Gateway API：本地集群已装好它的 CRD。）",
		},
		cmds: []command{
			kubectl("apply", "-f", canaryManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/shop", "--timeout=2m"),
			// The route's weights as a watch delivers them: every step's,
			// however briefly each lasts on a loaded machine.
			kubectlWatch("BACKENDS", "0,100", "get", "httproute", "shop", "--watch", "-o", routeWeightColumns),
			kubectl("patch", "appsvc", "shop", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
		},
		expect: text{
			"the route's weights went 90/10, 50/50, 0/100 between shop and shop-canary",
			"路由的权重依次为 shop 与 shop-canary 之间的 90/10、50/50、0/100",
		},
		check: routeSplits,
	}, {
		title: text{"Promoted; then a canary aborted", "晋升完成；再中止一次金丝雀发布"},
		say: text{
			"Once every shop Pod runs nginx:1.28, the canary's objects go and the route has one backend again.\n" +
				"Then a new image, and spec.canary.abort: all the traffic goes back to the running Pods in one write, the\n" +
				"canary's Pods go, and the AppService says Stalled, CanaryAborted, with a Warning Event.",
			"所有 shop 的 Pod 都运行 nginx:1.28 后，金丝雀的对象被删除，路由又只有一个后端。\n" +
				"接着换一个新镜像，再设置 spec.canary.abort：全部流量一次写入就回到正在运行的 Pod，\n" +
				"金丝雀的 Pod 被删除，AppService 显示 Stalled、CanaryAborted，并发出一条 Warning Event。",
		},
		cmds: []command{
			kubectl("wait", "--for=jsonpath={.spec.rules[0].backendRefs[0].weight}=1", "httproute/shop", "--timeout=2m"),
			kubectl("get", "httproute", "shop", "-o", routeWeights),
			kubectl("patch", "appsvc", "shop", "--type=merge", "-p", `{"spec":{"image":"nginx:1.29"}}`),
			kubectl("wait", "--for=jsonpath={.status.canary.weight}=10", "appsvc/shop", "--timeout=2m"),
			kubectl("patch", "appsvc", "shop", "--type=merge", "-p", `{"spec":{"canary":{"abort":true}}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=CanaryAborted`, "appsvc/shop", "--timeout=1m"),
			kubectl("get", "httproute", "shop", "-o", routeWeights),
			kubectl("get", "appsvc", "shop", "-o", `jsonpath={.status.conditions[?(@.type=="Stalled")].message}{"\n"}`),
		},
		expect: text{
			"promoted to nginx:1.28 behind the one Service; then nginx:1.29 aborted: the route back to shop alone, shop-canary gone",
			"晋升为 nginx:1.28，只有一个 Service；随后 nginx:1.29 被中止：路由只剩 shop，shop-canary 已删除",
		},
		check: promotedThenAborted,
	}, {
		title: text{"A canary aborted by its analysis", "被分析中止的金丝雀发布"},
		say: text{
			"checkout's canary has an analysis: every 2 s while a step's weight is routed, the controller asks Prometheus for the share\n" +
				"of checkout-canary's requests not answered 5xx, and more than one failure below 0.95 aborts the canary. The Prometheus is\n" +
				"real, started by the tour; the local control plane has no gateway, so the tour serves what a gateway would export,\n" +
				"gateway_requests_total per Service, and makes checkout-canary answer 20% of its requests 503.",
			"checkout 的金丝雀带有分析：某一步的权重生效期间，控制器每 2 秒向 Prometheus 查询 checkout-canary 的请求中\n" +
				"没有以 5xx 应答的比例，低于 0.95 的失败超过一次，金丝雀就被中止。Prometheus 是真的，由演示启动；本地控制面没有网关，\n" +
				"所以由演示提供网关本会导出的数据，即按 Service 计数的 gateway_requests_total，并让 checkout-canary 的请求有 20% 以 503 应答。",
		},
		ownController: &setsPrometheus,
		before:        serveErrors,
		cmds: []command{
			kubectl("apply", "-f", analysisManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/checkout", "--timeout=2m"),
			kubectl("patch", "appsvc", "checkout", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=CanaryAnalysisFailed`, "appsvc/checkout", "--timeout=2m"),
			kubectl("get", "httproute", "checkout", "-o", routeWeights),
			kubectl("get", "appsvc", "checkout", "-o",
				`jsonpath={range .status.canary.analysis[*]}{.name}: {.result} at {.value}, {.failures} failures: {.message}{"\n"}{end}`),
			kubectl("get", "events", "--field-selector", "involvedObject.name=checkout,reason=CanaryAnalysisFailed"),
		},
		expect: text{
			"aborted by its analysis (Stalled, CanaryAnalysisFailed): success-rate failed twice at 0.8, below 0.95; the route back to checkout alone,\n" +
				"checkout-canary gone, and a Warning Event naming the metric, its value and the threshold",
			"被分析中止（Stalled，CanaryAnalysisFailed）：success-rate 两次失败，值为 0.8，低于 0.95；路由只剩 checkout，\n" +
				"checkout-canary 已删除，一条 Warning Event 写明了指标、它的值和阈值",
		},
		check: abortedByAnalysis,
	}, {
		title: text{"A judge defined once: a ClusterAnalysisTemplate", "只定义一次的评判：ClusterAnalysisTemplate"},
		say: text{
			"A platform team writes its success-rate check once, as a ClusterAnalysisTemplate, and cart's canary names it instead of\n" +
				"its own query. The canary pins the template as it resolved it at its start (its status keeps the metrics and a digest),\n" +
				"so an edit reaches the next release only. Then cart names a template that does not exist: its next canary holds at its\n" +
				"start, with no traffic, Stalled with a reason of its own, and a Warning Event says which template.",
			"平台团队把成功率检查只写一次，写成 ClusterAnalysisTemplate，cart 的金丝雀引用它，而不是写自己的查询。\n" +
				"金丝雀在开始时把解析出的模板固定下来（status 中保存指标和摘要），所以对模板的修改只影响下一次发布。\n" +
				"接着 cart 引用一个不存在的模板：它的下一个金丝雀停在起点，没有流量，Stalled 有自己的原因，一条 Warning Event 写明是哪个模板。",
		},
		ownController: &setsPrometheus,
		before:        serveCart,
		cmds: []command{
			kubectl("apply", "-f", templateManifest),
			kubectl("apply", "-f", cartManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/cart", "--timeout=2m"),
			kubectl("patch", "appsvc", "cart", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
			kubectl("wait", "--for=jsonpath={.status.canary.templates[0].name}=success-rate", "appsvc/cart", "--timeout=2m"),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=RolloutComplete`, "appsvc/cart", "--timeout=2m"),
			kubectl("appservice", "get", "cart"),
			kubectl("patch", "appsvc", "cart", "--type=json", "-p",
				`[{"op":"replace","path":"/spec/canary/analysis/templates/0/name","value":"no-such-judge"},{"op":"replace","path":"/spec/image","value":"nginx:1.29"}]`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=CanaryAnalysisUnresolved`, "appsvc/cart", "--timeout=1m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=cart,reason=CanaryAnalysisUnresolved"),
		},
		expect: text{
			"nginx:1.28 promoted, judged by the template it pinned; nginx:1.29 held at its start, Stalled (CanaryAnalysisUnresolved):\n" +
				"ClusterAnalysisTemplate no-such-judge does not exist, with no canary Deployment",
			"nginx:1.28 已晋升，由它固定下来的模板评判；nginx:1.29 停在起点，Stalled（CanaryAnalysisUnresolved）：\n" +
				"ClusterAnalysisTemplate no-such-judge 不存在，没有金丝雀的 Deployment",
		},
		check: judgedByTemplate,
	}, {
		title: text{"Drive a release by hand: a gate, testers, promote, a rollback", "手动推进发布：关卡、测试者、晋升、回滚"},
		say: text{
			"storefront's first step waits at a gate for a person; requests with x-canary: qa reach the canary beside the\n" +
				"step's 20%; and a change back to one of its last two images skips the steps. kubectl appservice, the plugin\n" +
				"(make build puts it in bin/, on the tour's PATH), draws it as a tree, redrawn from watches, and promotes it:\n" +
				"its request goes to the status, which GitOps tools leave alone.",
			"storefront 的第一步在关卡处等人；带 x-canary: qa 的请求在这一步的 20% 之外直达金丝雀；\n" +
				"改回最近两个镜像之一时跳过所有步骤。插件 kubectl appservice（make build 把它放进 bin/，演示已将其加入 PATH）\n" +
				"把它画成一棵由 watch 驱动重绘的树，并晋升它：它的请求写进 status，GitOps 工具不会去动它。",
		},
		cmds: []command{
			kubectl("apply", "-f", releaseManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/storefront", "--timeout=2m"),
			kubectl("patch", "appsvc", "storefront", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}=CanaryGated`, "appsvc/storefront", "--timeout=2m"),
			kubectl("get", "httproute", "storefront", "-o", routeRules),
			kubectlWatch("waits at its gate", "Canary:      none", "appservice", "get", "storefront", "--watch"),
			kubectl("appservice", "promote", "storefront"),
		},
		expect: text{
			"held at its gate with the testers' rule beside the weights, promoted by kubectl appservice promote: every Pod runs nginx:1.28",
			"停在关卡处，测试者的规则与权重并存；由 kubectl appservice promote 晋升：每个 Pod 都运行 nginx:1.28",
		},
		check: releasedByHand,
	}, {
		title: text{"A fast rollback", "快速回滚"},
		say: text{
			"Back to nginx:1.27, one of storefront's last two stable templates (rollbackWindow: 2): no canary, the stable\n" +
				"Deployment takes it at once, and an Event says so.",
			"改回 nginx:1.27，它是 storefront 最近两个稳定模板之一（rollbackWindow: 2）：没有金丝雀，\n" +
				"稳定的 Deployment 立即换上它，并有一条 Event 说明。",
		},
		cmds: []command{
			kubectl("patch", "appsvc", "storefront", "--type=merge", "-p", `{"spec":{"image":"nginx:1.27"}}`),
			kubectl("wait", "--for=jsonpath={.status.observedGeneration}=3", "appsvc/storefront", "--timeout=1m"),
			kubectl("wait", "--for=condition=Ready", "appsvc/storefront", "--timeout=2m"),
			kubectl("get", "events", "--field-selector", "involvedObject.name=storefront,reason=CanaryRolledBack"),
			kubectl("appservice", "list"),
		},
		expect: text{
			"rolled back to nginx:1.27 without a canary (a Normal Event CanaryRolledBack), storefront-canary gone",
			"不经金丝雀回滚到 nginx:1.27（一条 Normal Event CanaryRolledBack），storefront-canary 不存在",
		},
		check: rolledBack,
	}, {
		title: text{"Shadow traffic and sticky users", "影子流量与粘性用户"},
		say: text{
			"shadow's first step has a weight of 0 and a mirror of 50%: the canary gets a copy of half the requests, its\n" +
				"answers dropped, and serves no one until it is promoted. Its users stay on it by a cookie (sticky). Its gRPC\n" +
				"port has a GRPCRoute, mirrored the same. Someone else adds a maintenance rule to its HTTPRoute: the controller\n" +
				"names its own rules and keeps that one.",
			"shadow 的第一步权重为 0、镜像 50%：金丝雀收到一半请求的副本，它的回答被丢弃，在晋升之前不服务任何人。\n" +
				"它的用户靠 cookie 留在它上面（sticky）。它的 gRPC 端口有一条 GRPCRoute，同样被镜像。有人在它的 HTTPRoute 上\n" +
				"加了一条维护规则：控制器为自己的规则命名，并保留那一条。",
		},
		cmds: []command{
			kubectl("apply", "-f", shadowManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/shadow", "--timeout=2m"),
			kubectl("patch", "httproute", "shadow", "--type=json", "-p",
				`[{"op":"add","path":"/spec/rules/-","value":{"name":"maintenance",`+
					`"matches":[{"path":{"type":"Exact","value":"/down"}}],"backendRefs":[{"name":"shadow","port":80}]}}]`),
			kubectl("patch", "appsvc", "shadow", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
			kubectl("wait", `--for=jsonpath={.status.conditions[?(@.type=="Reconciling")].reason}=CanaryGated`, "appsvc/shadow", "--timeout=2m"),
			kubectl("get", "httproute", "shadow", "-o", routeNamedRules),
			kubectl("get", "grpcroute", "shadow", "-o", routeNamedRules),
			kubectl("appservice", "promote", "shadow"),
		},
		expect: text{
			"at its gate, the controller's rule mirrors to shadow-canary with no weight, its sticky twin sends the cookie's carriers there,\n" +
				"and the maintenance rule someone else added is kept; the GRPCRoute's rule mirrors too; promoted, the mirrors and the\n" +
				"sticky rule are gone, the maintenance rule stays",
			"在关卡处，控制器的规则把请求镜像到 shadow-canary 且不分权重，它的粘性孪生规则把带 cookie 的请求送去那里，\n" +
				"他人加的维护规则被保留；GRPCRoute 的规则同样镜像；晋升后镜像和粘性规则都移除，维护规则仍在",
		},
		check: shadowed,
	}, {
		title: text{"Hear about a release: a signed webhook", "发布通知：签名的 webhook"},
		say: text{
			"A NotificationDestination posts each edge of the releases of the AppServices it selects, here those labelled\n" +
				"team=shop, as a signed CloudEvent: started, each step, promoted. The tour runs the receiver on this machine; it checks\n" +
				"each post's signature with the Secret's key and prints what arrived. The status records each delivery with its edge.",
			"NotificationDestination 把它选中的 AppService（这里是带 team=shop 标签的）每次发布的每个边沿，以签名的 CloudEvent\n" +
				"投递出去：开始、每一步、晋升。演示在本机运行接收方；它用 Secret 里的密钥校验每次投递的签名，并打印收到的内容。\n" +
				"status 随边沿一起记录每次投递。",
		},
		ownController: &localReceiver,
		before:        serveReceiver,
		cmds: []command{
			kubectl("apply", "-f", ordersManifest),
			kubectl("wait", "--for=condition=Ready", "appsvc/orders", "--timeout=2m"),
			kubectl("patch", "appsvc", "orders", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`),
			kubectl("wait", `--for=jsonpath={.status.notifications.edges[?(@.edge=="Promoted")].deliveries[0].result}=Delivered`, "appsvc/orders", "--timeout=2m"),
			kubectl("appservice", "get", "orders"),
		},
		expect: text{
			"each edge once, in order, signed: Started, step 1, step 2, Promoted; the status counts 4 deliveries",
			"每个边沿一次，按顺序，带签名：开始、第 1 步、第 2 步、晋升；status 记录了 4 次投递",
		},
		check: heardOnce,
	}, {
		title: text{"Edit the Deployment by hand", "手动修改 Deployment"},
		say: text{
			"The controller owns the fields the spec sets, and only those: a hand-edited replica count is put back,\n" +
				"a label someone else added is kept.",
			"控制器只管 spec 里设定的那些字段：手动改掉的副本数会被改回来，\n" +
				"别人加上的标签则原样保留。",
		},
		before: mark("generation", "deployment/nginx-app", "{.metadata.generation}"),
		cmds: []command{
			kubectl("label", "deploy", "nginx-app", "team=web"),
			kubectl("patch", "deploy", "nginx-app", "--type=merge", "-p", `{"spec":{"replicas":1}}`),
			kubectl("wait", "--for=jsonpath={.spec.replicas}=3", "deploy/nginx-app", "--timeout=1m"),
			kubectl("get", "deploy", "nginx-app", "--show-labels"),
		},
		expect: text{
			"replicas back at 3, written again by the controller; the team=web label is still there",
			"副本数被控制器改回 3；team=web 标签还在",
		},
		check: func(ctx context.Context, t *tour) error {
			before, err := strconv.Atoi(t.marks["generation"])
			if err != nil {
				return fmt.Errorf("generation before the edit: %q", t.marks["generation"])
			}
			// Our patch made one generation, the controller's repair another.
			if err := t.eventually(ctx, func() (bool, string, error) {
				got, err := t.get(ctx, "deployment/nginx-app", "{.metadata.generation}/{.spec.replicas}")
				gen, reps, _ := strings.Cut(got, "/")
				n, _ := strconv.Atoi(gen)
				return n >= before+2 && reps == "3", "generation/replicas " + got, err
			}); err != nil {
				return err
			}
			return t.equals(ctx, "deployment/nginx-app", "{.metadata.labels.team}", "web")
		},
	}, {
		title: text{"An object it does not own", "一个不归它管的对象"},
		say: text{
			"A Deployment named other-app already exists, made by someone else. The AppService other-app wants that name:\n" +
				"the controller never touches what it does not control, so the AppService is Degraded with a Warning Event.",
			"已经有人建了一个叫 other-app 的 Deployment。AppService other-app 也要用这个名字：\n" +
				"控制器绝不改动不归它控制的对象，于是这个 AppService 变为 Degraded，并发出一条 Warning Event。",
		},
		cmds: []command{
			kubectl("create", "deployment", "other-app", "--image=nginx:1.27"),
			kubectl("apply", "-f", otherManifest),
			kubectl("wait", "--for=condition=Degraded", "appsvc/other-app", "--timeout=1m"),
			kubectl("get", "appsvc", "other-app", "-o", `jsonpath={.status.conditions[?(@.type=="Degraded")].message}{"\n"}`),
		},
		expect: text{
			"Degraded and Stalled (ResourceExists) with a Warning Event; the other Deployment is untouched",
			"Degraded 与 Stalled（ResourceExists），有 Warning Event；那个 Deployment 毫发无损",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.equals(ctx, "appservice/other-app", `{.status.conditions[?(@.type=="Degraded")].reason}`, "ResourceExists"); err != nil {
				return err
			}
			if err := t.equals(ctx, "appservice/other-app", `{.status.conditions[?(@.type=="Stalled")].status}`, "True"); err != nil {
				return err
			}
			if err := t.event(ctx, "other-app", "ResourceExists", "is not controlled by AppService other-app"); err != nil {
				return err
			}
			return t.equals(ctx, "deployment/other-app", "{.spec.template.spec.containers[0].image}/{.metadata.ownerReferences}", "nginx:1.27/")
		},
	}, {
		title: text{"Give the name back", "把名字让出来"},
		say: text{
			"Delete the stranger. It never carried the controller's label, so no watch event tells the controller;\n" +
				"the AppService's retries, with exponential backoff, find the name free and create its own Deployment.",
			"删掉那个“外人”。它从来没有控制器的标签，所以不会有 watch 事件通知控制器；\n" +
				"是这个 AppService 按指数退避进行的重试发现名字空出来了，于是创建了自己的 Deployment。",
		},
		cmds: []command{
			kubectl("delete", "deployment", "other-app"),
			kubectl("wait", "--for=condition=Available", "appsvc/other-app", "--timeout=5m"),
			kubectl("get", "appsvc", "other-app"),
		},
		expect: text{
			"other-app is Available, Degraded is False, its Deployment is its own",
			"other-app 已 Available，Degraded 为 False，Deployment 归它所有",
		},
		check: func(ctx context.Context, t *tour) error {
			if err := t.equals(ctx, "appservice/other-app", `{.status.conditions[?(@.type=="Degraded")].status}`, "False"); err != nil {
				return err
			}
			return t.equals(ctx, "deployment/other-app", "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}", "AppService/other-app")
		},
	}, {
		title: text{"Run a command once: an Activity", "只运行一次的命令：Activity"},
		say: text{
			"The controller's second kind, the kubebuilder tutorial's Activity: its command runs once, in a Job of one Pod\n" +
				"that is not retried. status.prosta goes Pending, Running, Succeeded (or Failed, with the exit code and last lines).",
			"控制器的第二种资源，即 kubebuilder 教程里的 Activity：它的命令只运行一次，由一个只有一个 Pod、不重试的 Job 执行。\n" +
				"status.prosta 依次为 Pending、Running、Succeeded（失败时为 Failed，并给出退出码和最后几行输出）。",
		},
		cmds: []command{
			kubectl("apply", "-f", activityManifest),
			kubectl("wait", "--for=jsonpath={.status.prosta}=Succeeded", "activity/sleep-once", "--timeout=2m"),
			kubectl("get", "activity", "sleep-once", "-o", "wide"),
			kubectl("get", "job", "-l", "app.example.com/activity=sleep-once"),
		},
		expect: text{"the Activity Succeeded with exit code 0, through its Job", "Activity 通过它的 Job 成功结束，退出码为 0"},
		check: func(ctx context.Context, t *tour) error {
			return t.equals(ctx, "activity/sleep-once", "{.status.exitCode}", "0")
		},
	}, {
		title: text{"A bad manifest", "一份有错的清单"},
		say: text{
			"A negative size and a port above 65535. The CRD's schema refuses them at admission, naming each field,\n" +
				"before any controller sees them.",
			"size 是负数，port 超过 65535。CRD 的 schema 在准入阶段就拒绝了它，并指出是哪个字段，\n" +
				"控制器根本看不到它。",
		},
		cmds: []command{kubectlFails("apply", "-f", badManifest)},
		expect: text{
			"refused, naming spec.size and spec.ports[0].port; nothing was stored",
			"被拒绝，错误信息点名 spec.size 和 spec.ports[0].port；什么也没有存下",
		},
		check: func(ctx context.Context, t *tour) error {
			for _, field := range []string{"spec.size", "spec.ports[0].port"} {
				if !strings.Contains(t.last[0], field) {
					return fmt.Errorf("the refusal does not name %s: %s", field, t.last[0])
				}
			}
			return t.equals(ctx, "appservice/bad-app", "{.metadata.name}", "")
		},
	}, {
		title: text{"Per-app metrics", "每个应用的指标"},
		say: text{
			"/metrics has a series for each AppService and Activity, computed from the controller's caches when it is scraped:\n" +
				"which apps are not Ready and why, which Activities failed (docs/monitoring.md has the alerts and the dashboard).",
			"/metrics 为每个 AppService 和 Activity 各提供一组序列，抓取时由控制器的缓存算出：\n" +
				"哪些应用没有 Ready、原因是什么，哪些 Activity 失败了（告警和仪表盘见 docs/zh-CN/monitoring.md）。",
		},
		ownController: &readsMetrics,
		cmds:          []command{scrape("appservice_info", "activity_info")},
		expect: text{
			"nginx-app and other-app Ready, shop Stalled (CanaryAborted), checkout Stalled (CanaryAnalysisFailed), sleep-once Succeeded",
			"nginx-app 和 other-app 为 Ready，shop 为 Stalled（CanaryAborted），checkout 为 Stalled（CanaryAnalysisFailed），sleep-once 为 Succeeded",
		},
		check: seriesAsNarrated,
	}, {
		title: text{"Delete, and the garbage collector", "删除，以及垃圾回收"},
		say: text{
			"Deleting the AppServices and the Activity is all it takes: their children have owner references, so Kubernetes'\n" +
				"garbage collector deletes them. The controller has nothing to do.",
			"只需删除 AppService 和 Activity：子对象带着 ownerReference，Kubernetes 的垃圾回收器会把它们删掉，\n" +
				"控制器什么都不用做。",
		},
		cmds: []command{
			// checkout and cart exist only if the tour ran its own controller.
			kubectl("delete", "appsvc", "nginx-app", "other-app", "shop", "checkout", "cart", "orders", "--ignore-not-found"),
			kubectl("delete", "clusteranalysistemplate", "success-rate", "--ignore-not-found"),
			kubectl("delete", "notificationdestination,secret", "releases-webhook", "--ignore-not-found"),
			kubectl("delete", "activity", "sleep-once"),
			kubectl("delete", "configmap", "nginx-settings"),
			kubectl("wait", "--for=delete", "deploy/nginx-app", "svc/nginx-app", "deploy/other-app", "svc/other-app", "deploy/shop", "svc/shop",
				"httproute/shop", "deploy/checkout", "svc/checkout", "httproute/checkout", "deploy/cart", "svc/cart", "httproute/cart",
				"deploy/orders", "svc/orders", "job/sleep-once", "--timeout=2m"),
			kubectl("get", "deploy,svc", "-l", "app.example.com/appservice"),
		},
		expect: text{"the Deployments and Services are gone", "Deployment 和 Service 都没了"},
		check: func(ctx context.Context, t *tour) error {
			for _, o := range []string{"deployment/nginx-app", "service/nginx-app", "deployment/other-app", "service/other-app",
				"deployment/shop", "service/shop", "httproute/shop", "deployment/checkout", "service/checkout", "httproute/checkout",
				"deployment/orders", "service/orders", "configmap/nginx-settings", "job/sleep-once"} {
				if err := t.equals(ctx, o, "{.metadata.name}", ""); err != nil {
					return err
				}
			}
			return nil
		},
	}}
}
