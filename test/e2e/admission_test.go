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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// 5. Bad input: what the API server would refuse in the children is refused
// at admission, naming the field; what can only fail at run time ends in
// Degraded with the API server's message, and recovers when fixed.
func TestAdmission(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	cases := []struct {
		name, manifest, field, message string
	}{
		{"image missing", `spec: {size: 1}`, "spec.image", "Required value"},
		{"image empty", `spec: {image: ""}`, "spec.image", ""},
		{"image with spaces", `spec: {image: "nginx 1.7"}`, "spec.image", ""},
		{"negative size", `spec: {image: nginx, size: -1}`, "spec.size", ""},
		{"suspend not a boolean", `spec: {image: nginx, suspend: "yes"}`, "spec.suspend", "boolean"},
		{"port too large", `spec: {image: nginx, ports: [{port: 70000}]}`, "spec.ports[0].port", ""},
		{"port zero", `spec: {image: nginx, ports: [{port: 0}]}`, "spec.ports[0].port", ""},
		{"duplicate port", `spec: {image: nginx, ports: [{name: a, port: 80}, {name: b, port: 80}]}`, "spec.ports[1]", "Duplicate value"},
		{"unnamed ports", `spec: {image: nginx, ports: [{port: 80}, {port: 81}]}`, "spec.ports", "must have a name"},
		{"duplicate port names", `spec: {image: nginx, ports: [{name: web, port: 80}, {name: web, port: 81}]}`, "spec.ports", "names must be unique"},
		{"bad port name", `spec: {image: nginx, ports: [{name: HTTP, port: 80}]}`, "spec.ports[0].name", ""},
		{"bad protocol", `spec: {image: nginx, ports: [{port: 80, protocol: HTTP}]}`, "spec.ports[0].protocol", ""},
		{"bad target port name", `spec: {image: nginx, ports: [{port: 80, targetPort: not_a_name}]}`, "spec.ports[0].targetPort", ""},
		{"target port too large", `spec: {image: nginx, ports: [{port: 80, targetPort: 70000}]}`, "spec.ports[0].targetPort", ""},
		{"node port too large", `spec: {image: nginx, ports: [{port: 80, nodePort: 70000}]}`, "spec.ports[0].nodePort", ""},
		{"duplicate node port", `spec: {image: nginx, ports: [{name: a, port: 80, nodePort: 30100}, {name: b, port: 81, nodePort: 30100}]}`, "spec.ports", "nodePort"},
		{"node port on ClusterIP", `spec: {image: nginx, serviceType: ClusterIP, ports: [{port: 80, nodePort: 30100}]}`, "spec.ports", "ClusterIP"},
		{"bad service type", `spec: {image: nginx, serviceType: External}`, "spec.serviceType", "Unsupported value"},
		{"request above limit", `spec: {image: nginx, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}`, "spec.resources.requests", "less than or equal to its limit"},
		{"negative limit", `spec: {image: nginx, resources: {limits: {memory: "-1Gi"}}}`, "spec.resources.limits", "negative"},
		{"unknown resource name", `spec: {image: nginx, resources: {limits: {storage: 1Gi}}}`, "spec.resources.limits", "resource names must be"},
		{"fractional extended resource", `spec: {image: nginx, resources: {limits: {example.com/gpu: 500m}}}`, "spec.resources.limits", "whole numbers"},
		{"extended resource overcommitted", `spec: {image: nginx, resources: {requests: {example.com/gpu: 1}}}`, "spec.resources.requests", "cannot be overcommitted"},
		{"hugepages alone", `spec: {image: nginx, resources: {limits: {hugepages-2Mi: 2Mi}, requests: {hugepages-2Mi: 2Mi}}}`, "spec.resources", "require a cpu or memory"},
		{"env fieldPath unsupported", `spec: {image: nginx, envs: [{name: A, valueFrom: {fieldRef: {fieldPath: status.phase}}}]}`, "spec.envs[0].valueFrom.fieldRef.fieldPath", ""},
		{"env configMap key", `spec: {image: nginx, envs: [{name: A, valueFrom: {configMapKeyRef: {name: cm, key: "a/b"}}}]}`, "spec.envs[0].valueFrom.configMapKeyRef.key", ""},
		{"env divisor", `spec: {image: nginx, envs: [{name: A, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 2Mi}}}]}`, "spec.envs[0].valueFrom.resourceFieldRef.divisor", "divisor must be"},
		{"env resource of another container", `spec: {image: nginx, envs: [{name: A, valueFrom: {resourceFieldRef: {containerName: sidecar, resource: limits.cpu}}}]}`, "spec.envs", "containerName must be empty or the AppService's name"},
		{"bad appProtocol", `spec: {image: nginx, ports: [{port: 80, appProtocol: "my proto"}]}`, "spec.ports[0].appProtocol", ""},
		{"resource claims", `spec: {image: nginx, resources: {claims: [{name: gpu}]}}`, "spec.resources.claims", "not supported"},
		{"env without name", `spec: {image: nginx, envs: [{name: "", value: x}]}`, "spec.envs[0].name", ""},
		{"env name with =", `spec: {image: nginx, envs: [{name: "A=B", value: x}]}`, "spec.envs[0].name", ""},
		{"env value and valueFrom", `spec: {image: nginx, envs: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}`, "spec.envs[0].valueFrom", "may not be set"},
		{"env valueFrom empty", `spec: {image: nginx, envs: [{name: A, valueFrom: {}}]}`, "spec.envs[0].valueFrom", "exactly one"},
		{"bad pull policy", `spec: {image: nginx, imagePullPolicy: always}`, "spec.imagePullPolicy", "Unsupported value"},
		{"negative minReadySeconds", `spec: {image: nginx, minReadySeconds: -1}`, "spec.minReadySeconds", ""},
		{"minReadySeconds past the default deadline", `spec: {image: nginx, minReadySeconds: 600}`, "spec.progressDeadlineSeconds", "greater than minReadySeconds"},
		{"zero progressDeadlineSeconds", `spec: {image: nginx, progressDeadlineSeconds: 0}`, "spec.progressDeadlineSeconds", ""},
		{"negative revisionHistoryLimit", `spec: {image: nginx, revisionHistoryLimit: -1}`, "spec.revisionHistoryLimit", ""},
		{"bad service account name", `spec: {image: nginx, serviceAccountName: My_SA}`, "spec.serviceAccountName", ""},
		{"bad node selector key", `spec: {image: nginx, nodeSelector: {"-zone": a}}`, "spec.nodeSelector", "label keys"},
		{"envFrom with two sources", `spec: {image: nginx, envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]}`, "spec.envFrom[0]", "exactly one"},
		{"pod label overriding the selector", "spec: {image: nginx, podLabels: {" + appv1.LabelAppService + ": other}}", "spec.podLabels", "selects"},
		{"pod-template-hash pod label", `spec: {image: nginx, podLabels: {pod-template-hash: abc}}`, "spec.podLabels", "pod-template-hash"},
		{"pod annotation the API server drops", `spec: {image: nginx, podAnnotations: {pod.beta.kubernetes.io/init-containers: "[]"}}`, "spec.podAnnotations", "drops"},
		{"rollout restart's annotation", `spec: {image: nginx, podAnnotations: {kubectl.kubernetes.io/restartedAt: "2026-01-01T00:00:00Z"}}`, "spec.podAnnotations", "rollout"},
		{"the controller's config digest", "spec: {image: nginx, podAnnotations: {" + appv1.AnnotationConfigDigest + ": x}}", "spec.podAnnotations", "rolloutOnConfigChange"},
		{"reserved pod annotation", `spec: {image: nginx, podAnnotations: {controller.kubernetes.io/pod-deletion-cost: "1"}}`, "spec.podAnnotations", "Kubernetes reads"},
		{"toleration value with Exists", `spec: {image: nginx, tolerations: [{key: a, operator: Exists, value: x}]}`, "spec.tolerations[0].value", "Exists"},
		{"envFrom secretRef without a name", `spec: {image: nginx, envFrom: [{secretRef: {}}]}`, "spec.envFrom[0].secretRef.name", "Required"},
		{"probe timing beyond int32", `spec: {image: nginx, readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 3000000000}}`, "spec.readinessProbe.periodSeconds", ""},
		{"probe delay beyond int32", `spec: {image: nginx, livenessProbe: {tcpSocket: {port: 80}, initialDelaySeconds: 2147483648}}`, "spec.livenessProbe.initialDelaySeconds", ""},
		{"probe with two handlers", `spec: {image: nginx, livenessProbe: {exec: {command: ["true"]}, tcpSocket: {port: 80}}}`, "spec.livenessProbe", "exactly one handler"},
		{"probe port name too long", `spec: {image: nginx, readinessProbe: {httpGet: {port: sixteen-chars-xx}}}`, "spec.readinessProbe.httpGet.port", ""},
		{"readiness probe grace period", `spec: {image: nginx, readinessProbe: {tcpSocket: {port: 80}, terminationGracePeriodSeconds: 5}}`, "spec.readinessProbe.terminationGracePeriodSeconds", "readiness"},
		{"rollingUpdate with Recreate", `spec: {image: nginx, strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}}`, "spec.strategy.rollingUpdate", "Recreate"},
		{"maxUnavailable over 100%", `spec: {image: nginx, strategy: {rollingUpdate: {maxUnavailable: 101%}}}`, "spec.strategy.rollingUpdate.maxUnavailable", "percentage"},
		{"no surge, none unavailable", `spec: {image: nginx, strategy: {rollingUpdate: {maxUnavailable: 0, maxSurge: 0%}}}`, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0"},
		{"volumeMount naming no volume", `spec: {image: nginx, volumes: [{name: config, emptyDir: {}}], volumeMounts: [{name: data, mountPath: /data}]}`, "spec.volumeMounts", "must name one of spec.volumes"},
		{"duplicate volume names", `spec: {image: nginx, volumes: [{name: config, emptyDir: {}}, {name: config, secret: {secretName: s}}]}`, "spec.volumes[1]", "Duplicate value"},
		{"duplicate mount paths", `spec: {image: nginx, volumes: [{name: a, emptyDir: {}}], volumeMounts: [{name: a, mountPath: /x}, {name: a, mountPath: /x}]}`, "spec.volumeMounts[1]", "Duplicate value"},
		{"volume with two sources", `spec: {image: nginx, volumes: [{name: a, emptyDir: {}, configMap: {name: c}}]}`, "spec.volumes[0]", "exactly one of"},
		{"volume file path with ..", `spec: {image: nginx, volumes: [{name: a, configMap: {name: c, items: [{key: k, path: ../etc/passwd}]}}]}`, "spec.volumes[0].configMap.items[0].path", ""},
		{"volume mode above 0777", `spec: {image: nginx, volumes: [{name: a, secret: {secretName: s, defaultMode: 512}}]}`, "spec.volumes[0].secret.defaultMode", ""},
		{"projected files on one path", `spec: {image: nginx, volumes: [{name: a, projected: {sources: [{configMap: {name: c, items: [{key: k, path: p}]}}, {secret: {name: s, items: [{key: k, path: p}]}}]}}]}`, "spec.volumes[0].projected.sources", "same path"},
		{"short-lived projected token", `spec: {image: nginx, volumes: [{name: a, projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 60}}]}}]}`, "expirationSeconds", ""},
		{"downward volume field not in a volume", `spec: {image: nginx, volumes: [{name: a, downwardAPI: {items: [{path: ip, fieldRef: {fieldPath: status.podIP}}]}}]}`, "fieldPath", ""},
		{"recursiveReadOnly without readOnly", `spec: {image: nginx, volumes: [{name: a, emptyDir: {}}], volumeMounts: [{name: a, mountPath: /x, recursiveReadOnly: Enabled}]}`, "spec.volumeMounts[0].recursiveReadOnly", "readOnly"},
		{"absolute subPath", `spec: {image: nginx, volumes: [{name: a, emptyDir: {}}], volumeMounts: [{name: a, mountPath: /x, subPath: /etc}]}`, "spec.volumeMounts[0].subPath", ""},
		{"lifecycle handler with two actions", `spec: {image: nginx, lifecycle: {postStart: {exec: {command: ["true"]}, sleep: {seconds: 1}}}}`, "spec.lifecycle.postStart", "exactly one handler"},
		{"preStop sleep beyond the grace period", `spec: {image: nginx, terminationGracePeriodSeconds: 10, lifecycle: {preStop: {sleep: {seconds: 20}}}}`, "spec.lifecycle", "terminationGracePeriodSeconds"},
		{"lifecycle stopSignal", `spec: {image: nginx, lifecycle: {stopSignal: SIGTERM}}`, "spec.lifecycle.stopSignal", "not supported"},
		{"negative runAsUser", `spec: {image: nginx, securityContext: {runAsUser: -1}}`, "spec.securityContext.runAsUser", "between 0 and 2147483647"},
		{"privileged without privilege escalation", `spec: {image: nginx, securityContext: {privileged: true, allowPrivilegeEscalation: false}}`, "spec.securityContext.allowPrivilegeEscalation", "privileged"},
		{"Localhost seccomp without a profile", `spec: {image: nginx, securityContext: {seccompProfile: {type: Localhost}}}`, "spec.securityContext.seccompProfile.localhostProfile", "Localhost"},
		{"Unmasked procMount", `spec: {image: nginx, securityContext: {procMount: Unmasked}}`, "spec.securityContext.procMount", "hostUsers"},
		{"pod windowsOptions", `spec: {image: nginx, podSecurityContext: {windowsOptions: {runAsUserName: ContainerUser}}}`, "spec.podSecurityContext.windowsOptions", "Linux"},
		{"duplicate sysctls", `spec: {image: nginx, podSecurityContext: {sysctls: [{name: net.core.somaxconn, value: "1"}, {name: net.core.somaxconn, value: "2"}]}}`, "spec.podSecurityContext.sysctls", "unique"},
		{"node affinity term In without values", `spec: {image: nginx, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In}]}]}}}}`, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions", "In or NotIn"},
		{"node affinity without terms", `spec: {image: nginx, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}}`, "nodeSelectorTerms", ""},
		{"pod affinity weight above 100", `spec: {image: nginx, affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}}`, "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "between 1 and 100"},
		{"pod affinity without topologyKey", `spec: {image: nginx, affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: ""}]}}}`, "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "label key"},
		{"matchLabelKeys without a labelSelector", `spec: {image: nginx, affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, matchLabelKeys: [app]}]}}}`, "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]", "need a labelSelector"},
		{"duplicate spread constraints", `spec: {image: nginx, topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}`, "spec.topologySpreadConstraints[1]", "Duplicate value"},
		{"minDomains with ScheduleAnyway", `spec: {image: nginx, topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}]}`, "spec.topologySpreadConstraints[0].minDomains", "DoNotSchedule"},
		{"maxSkew zero", `spec: {image: nginx, topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}`, "spec.topologySpreadConstraints[0].maxSkew", "greater than 0"},
		{"duplicate matchLabelKeys", `spec: {image: nginx, topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}, matchLabelKeys: [pod-template-hash, pod-template-hash]}]}`, "spec.topologySpreadConstraints[0].matchLabelKeys", "unique"},
		{"downward API label key prefix too long", `spec: {image: nginx, envs: [{name: A, valueFrom: {fieldRef: {fieldPath: "metadata.labels['` + strings.Repeat("p", 254) + `/x']"}}}]}`, "spec.envs[0].valueFrom.fieldRef.fieldPath", "253"},
		{"name not a DNS-1035 label", `metadata: {name: 1app}
spec: {image: nginx}`, "metadata.name", "DNS-1035"},
		// Init containers and sidecars: their own fields as the app
		// container's, and the rules that span the Pod.
		{"init container named after the AppService", `spec: {image: nginx, initContainers: [{name: bad, image: busybox}]}`, "spec.initContainers", "named after the AppService"},
		{"sidecar named after the AppService", `spec: {image: nginx, sidecars: [{name: bad, image: busybox}]}`, "spec.sidecars", "named after the AppService"},
		{"sidecar with an init container's name", `spec: {image: nginx, initContainers: [{name: a, image: busybox}], sidecars: [{name: a, image: busybox}]}`, "spec.sidecars", "name of an init container"},
		{"two sidecars of one name", `spec: {image: nginx, sidecars: [{name: a, image: busybox}, {name: a, image: envoy}]}`, "spec.sidecars[1]", "Duplicate value"},
		{"init container without an image", `spec: {image: nginx, initContainers: [{name: a}]}`, "spec.initContainers[0].image", "Required value"},
		{"init container mount of no volume", `spec: {image: nginx, initContainers: [{name: a, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]}`, "spec.initContainers", "one of spec.volumes"},
		{"sidecar mount of no volume", `spec: {image: nginx, sidecars: [{name: a, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]}`, "spec.sidecars", "one of spec.volumes"},
		{"probe on an init container", `spec: {image: nginx, initContainers: [{name: a, image: busybox, readinessProbe: {tcpSocket: {port: 80}}}]}`, "spec.initContainers[0].readinessProbe", "sidecars only"},
		{"ports on an init container", `spec: {image: nginx, initContainers: [{name: a, image: busybox, ports: [{containerPort: 80}]}]}`, "spec.initContainers[0].ports", "sidecars only"},
		{"lifecycle on an init container", `spec: {image: nginx, initContainers: [{name: a, image: busybox, lifecycle: {preStop: {sleep: {seconds: 1}}}}]}`, "spec.initContainers[0].lifecycle", "sidecars only"},
		{"sidecar probe with two handlers", `spec: {image: nginx, sidecars: [{name: a, image: busybox, livenessProbe: {exec: {command: ["true"]}, tcpSocket: {port: 80}}}]}`, "spec.sidecars[0].livenessProbe", "exactly one handler"},
		{"sidecar probe port", `spec: {image: nginx, sidecars: [{name: a, image: busybox, readinessProbe: {httpGet: {port: Not_A_Port}}}]}`, "spec.sidecars[0].readinessProbe.httpGet.port", "IANA service name"},
		{"sidecar sleep beyond the grace period", `spec: {image: nginx, terminationGracePeriodSeconds: 10, sidecars: [{name: a, image: busybox, lifecycle: {preStop: {sleep: {seconds: 20}}}}]}`, "spec.sidecars", "terminationGracePeriodSeconds"},
		{"sidecar ports clash", `spec: {image: nginx, sidecars: [{name: a, image: busybox, ports: [{containerPort: 9000}]}, {name: b, image: busybox, ports: [{containerPort: 9000}]}]}`, "spec.sidecars", "same number and protocol"},
		{"sidecar port names clash", `spec: {image: nginx, sidecars: [{name: a, image: busybox, ports: [{name: metrics, containerPort: 9000}, {name: metrics, containerPort: 9001}]}]}`, "spec.sidecars", "same name"},
		{"sidecar port of the app", `spec: {image: nginx, ports: [{port: 80, targetPort: 8080}], sidecars: [{name: a, image: busybox, ports: [{containerPort: 8080}]}]}`, "spec.sidecars", "app container's"},
		{"sidecar port named as the app's", `spec: {image: nginx, ports: [{port: 80, targetPort: http}], sidecars: [{name: a, image: busybox, ports: [{name: http, containerPort: 9000}]}]}`, "spec.sidecars", "app container's"},
		{"sidecar port number", `spec: {image: nginx, sidecars: [{name: a, image: busybox, ports: [{containerPort: 70000}]}]}`, "spec.sidecars[0].ports[0].containerPort", ""},
		{"sidecar request above limit", `spec: {image: nginx, sidecars: [{name: a, image: busybox, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}]}`, "spec.sidecars[0].resources.requests", "less than or equal to its limit"},
		{"sidecar env resource of another container", `spec: {image: nginx, sidecars: [{name: a, image: busybox, env: [{name: M, valueFrom: {resourceFieldRef: {containerName: bad, resource: limits.memory}}}]}]}`, "spec.sidecars[0].env", "this container's name"},
		{"init container security context", `spec: {image: nginx, initContainers: [{name: a, image: busybox, securityContext: {runAsUser: -1}}]}`, "spec.initContainers[0].securityContext.runAsUser", ""},
		{"too many sidecars", `spec: {image: nginx, sidecars: [{name: s1, image: b}, {name: s2, image: b}, {name: s3, image: b}, {name: s4, image: b}, {name: s5, image: b}, {name: s6, image: b}, {name: s7, image: b}, {name: s8, image: b}, {name: s9, image: b}]}`, "spec.sidecars", ""},
		// The ServiceAccount, PodDisruptionBudget and HorizontalPodAutoscaler blocks.
		{"service account named twice", `spec: {image: nginx, serviceAccountName: a, serviceAccount: {name: b}}`, "spec.serviceAccount", "may not both be set"},
		{"existing service account without a name", `spec: {image: nginx, serviceAccount: {automountToken: false}}`, "spec.serviceAccount.name", "required unless create"},
		{"annotations of a service account not created", `spec: {image: nginx, serviceAccount: {name: a, annotations: {x: "v"}}}`, "spec.serviceAccount.annotations", "create: true"},
		{"service account annotation key", `spec: {image: nginx, serviceAccount: {create: true, annotations: {"a b": "v"}}}`, "spec.serviceAccount.annotations", "annotation keys"},
		{"service account annotation record", `spec: {image: nginx, serviceAccount: {create: true, annotations: {app.example.com/annotations: "v"}}}`, "spec.serviceAccount.annotations", "record"},
		{"both disruption bounds", `spec: {image: nginx, disruptionBudget: {minAvailable: 1, maxUnavailable: 1}}`, "spec.disruptionBudget", "exactly one"},
		{"no disruption bound", `spec: {image: nginx, disruptionBudget: {}}`, "spec.disruptionBudget", "exactly one"},
		{"disruption percentage over 100", `spec: {image: nginx, disruptionBudget: {minAvailable: "101%"}}`, "spec.disruptionBudget.minAvailable", "percentage up to 100%"},
		{"disruption bound negative", `spec: {image: nginx, disruptionBudget: {maxUnavailable: -1}}`, "spec.disruptionBudget.maxUnavailable", "non-negative"},
		{"autoscaling without max", `spec: {image: nginx, autoscaling: {minReplicas: 2}}`, "spec.autoscaling.maxReplicas", "Required value"},
		{"autoscaling max below min", `spec: {image: nginx, autoscaling: {minReplicas: 3, maxReplicas: 2}}`, "spec.autoscaling.maxReplicas", "minReplicas"},
		{"autoscaling to zero", `spec: {image: nginx, autoscaling: {minReplicas: 0, maxReplicas: 2}}`, "spec.autoscaling.minReplicas", ""},
		{"autoscaling target zero", `spec: {image: nginx, autoscaling: {maxReplicas: 2, targetCPUUtilizationPercentage: 0}}`, "spec.autoscaling.targetCPUUtilizationPercentage", ""},
		{"scaling window over an hour", `spec: {image: nginx, autoscaling: {maxReplicas: 2, behavior: {scaleDown: {stabilizationWindowSeconds: 3601}}}}`, "spec.autoscaling.behavior.scaleDown.stabilizationWindowSeconds", "3600"},
		{"scaling policies empty", `spec: {image: nginx, autoscaling: {maxReplicas: 2, behavior: {scaleUp: {policies: []}}}}`, "spec.autoscaling.behavior.scaleUp.policies", "at least one policy"},
		{"scaling policy type", `spec: {image: nginx, autoscaling: {maxReplicas: 2, behavior: {scaleUp: {policies: [{type: Replicas, value: 1, periodSeconds: 15}]}}}}`, "spec.autoscaling.behavior.scaleUp.policies[0].type", "Pods or Percent"},
		{"scaling policy period", `spec: {image: nginx, autoscaling: {maxReplicas: 2, behavior: {scaleDown: {policies: [{type: Pods, value: 1, periodSeconds: 1801}]}}}}`, "spec.autoscaling.behavior.scaleDown.policies[0].periodSeconds", "1800"},
		{"scaling tolerance negative", `spec: {image: nginx, autoscaling: {maxReplicas: 2, behavior: {scaleUp: {tolerance: "-0.1"}}}}`, "spec.autoscaling.behavior.scaleUp.tolerance", "greater than or equal to 0"},
		// The Ingress block.
		{"ingress without ports", `spec: {image: nginx, ingress: {hosts: [{host: a.example.com, paths: [{path: /}]}]}}`, "spec.ingress", "ports may not be empty"},
		{"ingress to a port not in ports", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{paths: [{port: 81}]}]}}`, "spec.ingress.hosts", "one of spec.ports"},
		{"ingress to a port name not in ports", `spec: {image: nginx, ports: [{name: http, port: 80}], ingress: {hosts: [{paths: [{port: web}]}]}}`, "spec.ingress.hosts", "one of spec.ports"},
		{"ingress without hosts", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: []}}`, "spec.ingress.hosts", ""},
		{"ingress host an IP", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{host: 10.0.0.1, paths: [{}]}]}}`, "spec.ingress.hosts[0].host", "not an IP address"},
		{"ingress host upper case", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{host: App.example.com, paths: [{}]}]}}`, "spec.ingress.hosts[0].host", ""},
		{"ingress path relative", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{paths: [{path: api}]}]}}`, "spec.ingress.hosts[0].paths[0].path", ""},
		{"ingress path with //", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{paths: [{path: /a//b}]}]}}`, "spec.ingress.hosts[0].paths[0].path", ""},
		{"ingress path type", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{paths: [{pathType: Regex}]}]}}`, "spec.ingress.hosts[0].paths[0].pathType", "Unsupported value"},
		{"ingress class annotation mismatch", `spec: {image: nginx, ports: [{port: 80}], ingress: {className: nginx, annotations: {kubernetes.io/ingress.class: traefik}, hosts: [{paths: [{}]}]}}`, "spec.ingress.annotations", "must match className"},
		{"ingress TLS secret name", `spec: {image: nginx, ports: [{port: 80}], ingress: {hosts: [{paths: [{}]}], tls: [{secretName: My_Secret}]}}`, "spec.ingress.tls[0].secretName", ""},
		// The HTTPRoute block (the CRD checks it whether or not the cluster serves the Gateway API).
		{"route without ports", `spec: {image: nginx, httpRoute: {parentRefs: [{name: gw}]}}`, "spec.httpRoute", "ports may not be empty"},
		{"route without parents", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: []}}`, "spec.httpRoute.parentRefs", ""},
		{"route parent named twice", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}, {name: gw}]}}`, "spec.httpRoute.parentRefs", "sectionName"},
		{"route to a port not in ports", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{port: 81}]}}`, "spec.httpRoute.rules", "one of spec.ports"},
		{"shrinkStable with a route", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], shrinkStable: true}}`, "spec.canary.shrinkStable", "not with httpRoute"},
		// The GRPCRoute block, as the HTTPRoute's.
		{"grpcRoute without ports", `spec: {image: nginx, grpcRoute: {parentRefs: [{name: gw}]}}`, "spec.grpcRoute", "ports may not be empty"},
		{"grpcRoute parent named twice", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}, {name: gw}]}}`, "spec.grpcRoute.parentRefs", "sectionName"},
		{"grpcRoute to a port not in ports", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}], rules: [{port: grpc}]}}`, "spec.grpcRoute.rules", "one of spec.ports"},
		{"grpcRoute method match with neither service nor method", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}], rules: [{matches: [{method: {type: Exact}}]}]}}`, "spec.grpcRoute.rules[0].matches[0].method", "service' or 'method'"},
		{"grpcRoute filter of an HTTP kind", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}], rules: [{filters: [{type: URLRewrite}]}]}}`, "spec.grpcRoute.rules[0].filters[0].type", "Unsupported value"},
		{"shrinkStable with a grpcRoute", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], shrinkStable: true}}`, "spec.canary.shrinkStable", "grpcRoute"},
		{"sticky with a grpcRoute alone", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], sticky: {cookieName: canary}}}`, "spec.canary.sticky", "set spec.httpRoute too"},
		{"a tester header a grpcRoute match names too", `spec: {image: nginx, ports: [{port: 80}], grpcRoute: {parentRefs: [{name: gw}], rules: [{matches: [{headers: [{name: X-Canary, value: beta}]}]}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: x-canary, value: qa}]}}`, "spec.canary.testerHeaders", "each match of grpcRoute.rules"},
		{"shrinkStable with autoscaling", `spec: {image: nginx, ports: [{port: 80}], autoscaling: {maxReplicas: 4}, canary: {steps: [{weight: 10}], shrinkStable: true}}`, "spec.canary.shrinkStable", "nor autoscaling"},
		{"a test without a command", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before}]}]}}`, "spec.canary.steps[0].tests[0].command", "Required value"},
		{"a test with an empty command", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: ""}]}]}}`, "spec.canary.steps[0].tests[0].command", "at least 1"},
		{"a test's negative deadline", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: "true", deadlineSeconds: -1}]}]}}`, "spec.canary.steps[0].tests[0].deadlineSeconds", "greater than or equal to 1"},
		{"a test's deadline past a day", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: load, when: During, command: "true", deadlineSeconds: 86401}]}]}}`, "spec.canary.steps[0].tests[0].deadlineSeconds", "less than or equal to 86400"},
		{"a test's env name that is not one", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: "true", envs: ["=x"]}]}]}}`, "spec.canary.steps[0].tests[0].envs[0]", "must be NAME=value"},
		{"a test's env name twice", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: "true", envs: [A=1, A=2]}]}]}}`, "spec.canary.steps[0].tests[0].envs", "only once"},
		{"a test at no moment", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: After, command: "true"}]}]}}`, "spec.canary.steps[0].tests[0].when", "Unsupported value"},
		{"a test with an unknown placeholder", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: "curl {{ url }}"}]}]}}`, "spec.canary.steps[0].tests[0].command", "{{ target }}"},
		{"two tests of one name", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: t, when: Before, command: "true"}, {name: t, when: During, command: "true"}]}]}}`, "spec.canary.steps[0].tests[1]", "Duplicate value"},
		{"a test's requests above its limits", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10, tests: [{name: smoke, when: Before, command: "true", resources: {limits: {cpu: 100m}, requests: {cpu: 200m}}}]}]}}`, "spec.canary.steps[0].tests[0].resources.requests", "less than or equal to its limit"},
		{"a test on a canary with no steps", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [], tests: [{name: smoke, when: Before, command: "true"}]}}`, "spec.canary.steps", "at least 1"},
		{"testers without a route", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10}], testerHeaders: [{name: x-qa, value: "1"}]}}`, "spec.canary.testerHeaders", "set spec.httpRoute or spec.grpcRoute too"},
		{"canary without steps", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: []}}`, "spec.canary.steps", ""},
		{"canary step weight zero", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 0}]}}`, "spec.canary.steps", "give it a mirror"},
		{"a mirror without a route", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0, mirror: 50}]}}`, "spec.canary.steps", "set spec.httpRoute or spec.grpcRoute too"},
		{"a mirror above 100", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 0, mirror: 101}]}}`, "spec.canary.steps[0].mirror", "less than or equal to 100"},
		{"a mirror of 0", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10, mirror: 0}]}}`, "spec.canary.steps[0].mirror", "greater than or equal to 1"},
		{"sticky without a route", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 10}], sticky: {cookieName: canary}}}`, "spec.canary.sticky", "set spec.httpRoute too"},
		{"a sticky cookie name that is not a token", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], sticky: {cookieName: "a;b"}}}`, "spec.canary.sticky.cookieName", ""},
		{"a sticky cookie kept past 30 days", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], sticky: {cookieName: canary, maxAgeSeconds: 2592001}}}`, "spec.canary.sticky.maxAgeSeconds", "less than or equal to 2592000"},
		{"sticky and testers on six rules", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{}, {}, {}, {}, {}, {}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: x-qa, value: "1"}], sticky: {cookieName: canary}}}`, "spec.canary.sticky", "at most 5 rules"},
		{"sticky beside a match on the Cookie header", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{matches: [{headers: [{name: cookie, value: a=1}]}]}]}, canary: {steps: [{weight: 10}], sticky: {cookieName: canary}}}`, "spec.canary.sticky", "none of them Cookie"},
		{"canary step weight above 100", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}, {weight: 101}]}}`, "spec.canary.steps[1].weight", ""},
		{"canary step without a weight", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{pauseSeconds: 60}]}}`, "spec.canary.steps[0].weight", "Required value"},
		{"canary pause negative", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10, pauseSeconds: -1}]}}`, "spec.canary.steps[0].pauseSeconds", ""},
		{"canary of 21 steps", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [` + strings.Repeat("{weight: 5}, ", 20) + `{weight: 100}]}}`, "spec.canary.steps", "20"},
		{"canary abort not a boolean", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], abort: "yes"}}`, "spec.canary.abort", "boolean"},
		{"canary name too long", `metadata: {name: ` + strings.Repeat("a", 57) + `}
spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}]}}`, "metadata.name", "at most 56 characters"},
		{"a blue-green name too long", `metadata: {name: ` + strings.Repeat("a", 56) + `}
spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}], blueGreen: {}}}`, "metadata.name", "55 with blueGreen"},
		{"a blue-green step of a weight", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}, {weight: 50}], blueGreen: {}}}`, "spec.canary.steps", "with blueGreen each step's weight is 0"},
		{"blue-green and sticky", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 0}], blueGreen: {}, sticky: {cookieName: c}}}`, "spec.canary.blueGreen", "not with sticky nor shrinkStable"},
		{"blue-green and shrinkStable", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}], blueGreen: {}, shrinkStable: true}}`, "spec.canary.blueGreen", "not with sticky nor shrinkStable"},
		{"a preview of no Pods", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}], blueGreen: {previewReplicas: 0}}}`, "spec.canary.blueGreen.previewReplicas", "greater than or equal to 1"},
		{"a preview hostname without an httpRoute", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}], blueGreen: {previewHostname: preview.example.com}}}`, "spec.canary.blueGreen.previewHostname", "set spec.httpRoute too"},
		{"a preview hostname that is not one", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 0}], blueGreen: {previewHostname: "Bad_Host"}}}`, "spec.canary.blueGreen.previewHostname", ""},
		{"a scale-down delay above a day", `spec: {image: nginx, ports: [{port: 80}], canary: {steps: [{weight: 0}], blueGreen: {scaleDownDelaySeconds: 86401}}}`, "spec.canary.blueGreen.scaleDownDelaySeconds", "less than or equal to 86400"},
		{"a gate that is not a boolean", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10, gate: sometimes}]}}`, "spec.canary.steps[0].gate", ""},
		{"a tester header that is not a header name", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: "x canary", value: qa}]}}`, "spec.canary.testerHeaders[0].name", ""},
		{"a tester header without a value", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: x-canary, value: ""}]}}`, "spec.canary.testerHeaders[0].value", ""},
		{"tester headers that repeat", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: x-canary, value: a}, {name: x-canary, value: b}]}}`, "spec.canary.testerHeaders[1]", "Duplicate value"},
		{"nine tester headers", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: h0, value: a}, {name: h1, value: a}, {name: h2, value: a}, {name: h3, value: a}, {name: h4, value: a}, {name: h5, value: a}, {name: h6, value: a}, {name: h7, value: a}, {name: h8, value: a}]}}`, "spec.canary.testerHeaders", "8"},
		{"a tester header a route match names too", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{matches: [{headers: [{name: X-Canary, value: beta}]}]}]}, canary: {steps: [{weight: 10}], testerHeaders: [{name: x-canary, value: qa}]}}`, "spec.canary.testerHeaders", "may not name one"},
		{"a rollback window of 11", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], rollbackWindow: 11}}`, "spec.canary.rollbackWindow", "10"},
		{"a negative rollback window", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], rollbackWindow: -1}}`, "spec.canary.rollbackWindow", "0"},
		{"analysis without metrics", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: []}}}`, "spec.canary.analysis.metrics", ""},
		{"analysis of 11 metrics", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m0, query: up, min: "1"}, {name: m1, query: up, min: "1"}, {name: m2, query: up, min: "1"}, {name: m3, query: up, min: "1"}, {name: m4, query: up, min: "1"}, {name: m5, query: up, min: "1"}, {name: m6, query: up, min: "1"}, {name: m7, query: up, min: "1"}, {name: m8, query: up, min: "1"}, {name: m9, query: up, min: "1"}, {name: m10, query: up, min: "1"}]}}}`, "spec.canary.analysis.metrics", "10"},
		{"analysis metric names repeat", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: up, min: "1"}, {name: m, query: up, max: "2"}]}}}`, "spec.canary.analysis.metrics[1]", "Duplicate value"},
		{"analysis metric name not a label", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: Error_Rate, query: up, min: "1"}]}}}`, "spec.canary.analysis.metrics[0].name", ""},
		{"analysis metric without bounds", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: up}]}}}`, "spec.canary.analysis.metrics[0]", "set min, max or both"},
		{"analysis min above max", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: up, min: "2", max: "1.5"}]}}}`, "spec.canary.analysis.metrics[0].min", "min may not be above max"},
		{"analysis threshold not a decimal", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: up, max: "1e3"}]}}}`, "spec.canary.analysis.metrics[0].max", ""},
		{"analysis threshold a number", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: up, max: 0.5}]}}}`, "spec.canary.analysis.metrics[0].max", "string"},
		{"analysis query unknown placeholder", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: "up{job=\"{{ job }}\"}", min: "1"}]}}}`, "spec.canary.analysis.metrics[0].query", "a {{ opens one of {{ namespace }}, {{ name }}, {{ target }}, {{ interval }} or {{ args.NAME }}"},
		{"analysis inline argument", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: "up{job=\"{{ args.job }}\"}", min: "1"}]}}}`, "spec.canary.analysis.metrics", "{{ args.NAME }} is a template's"},
		{"analysis neither metrics nor templates", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {intervalSeconds: 10}}}`, "spec.canary.analysis", "set metrics, templates or both"},
		{"analysis template kind", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {templates: [{name: x, kind: Template}]}}}`, "spec.canary.analysis.templates[0].kind", "Unsupported value"},
		{"analysis template argument name", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {templates: [{name: x, args: {"9x": v}}]}}}`, "spec.canary.analysis.templates[0].args", "an argument's name"},
		{"analysis template twice", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {templates: [{name: x}, {name: x, kind: AnalysisTemplate}]}}}`, "spec.canary.analysis.templates[1]", "Duplicate value"},
		{"analysis query empty", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {metrics: [{name: m, query: "", min: "1"}]}}}`, "spec.canary.analysis.metrics[0].query", ""},
		{"analysis interval zero", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {intervalSeconds: 0, metrics: [{name: m, query: up, min: "1"}]}}}`, "spec.canary.analysis.intervalSeconds", ""},
		{"analysis failure limit negative", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {failureLimit: -1, metrics: [{name: m, query: up, min: "1"}]}}}`, "spec.canary.analysis.failureLimit", ""},
		{"analysis error limit over 100", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {errorLimit: 101, metrics: [{name: m, query: up, min: "1"}]}}}`, "spec.canary.analysis.errorLimit", ""},
		{"analysis no data policy", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}]}, canary: {steps: [{weight: 10}], analysis: {noData: Ignore, metrics: [{name: m, query: up, min: "1"}]}}}`, "spec.canary.analysis.noData", "Unsupported value"},
		{"pod label selecting the canary", `spec: {image: nginx, podLabels: {app.example.com/canary: x}}`, "spec.podLabels", "app.example.com/canary"},
		{"route hostname upper case", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], hostnames: [App.example.com]}}`, "spec.httpRoute.hostnames[0]", ""},
		{"route redirect", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}]}]}}`, "spec.httpRoute.rules[0].filters", "requestRedirect"},
		{"route path with //", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{matches: [{path: {type: PathPrefix, value: "/a//b"}}]}]}}`, "spec.httpRoute.rules[0].matches[0].path", "//"},
		{"route filter without its field", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{filters: [{type: URLRewrite}]}]}}`, "spec.httpRoute.rules[0].filters[0]", "urlRewrite must be specified"},
		{"route prefix rewrite without a prefix match", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]}]}}`, "spec.httpRoute.rules[0].filters", "exactly one PathPrefix match"},
		{"route timeout format", `spec: {image: nginx, ports: [{port: 80}], httpRoute: {parentRefs: [{name: gw}], rules: [{timeouts: {request: 10}}]}}`, "spec.httpRoute.rules[0].timeouts.request", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			manifest := "apiVersion: app.example.com/v1\nkind: AppService\n" + tc.manifest + "\n"
			if !strings.Contains(tc.manifest, "metadata:") {
				manifest = "apiVersion: app.example.com/v1\nkind: AppService\nmetadata: {name: bad}\n" + tc.manifest + "\n"
			}
			// Sent as written, as kubectl would: some of these do not
			// even fit the Go types.
			result := apps.AppV1().RESTClient().Post().Namespace(ns).Resource("appservices").
				SetHeader("Content-Type", "application/yaml").Body([]byte(manifest)).Do(context.Background())
			err := result.Error()
			if err == nil {
				t.Fatalf("admitted:\n%s", manifest)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("refused, but not as invalid: %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("the error does not name %s (%q):\n%v", tc.field, tc.message, err)
			}
		})
	}

	// The Activity's refusals, each naming its field. Its spec cannot
	// change once created (TestActivity edits one).
	var envs []string
	for i := range 65 {
		envs = append(envs, fmt.Sprintf("E%d=1", i))
	}
	manyEnvs := strings.Join(envs, ", ")
	activityCases := []struct {
		name, manifest, field, message string
	}{
		{"command missing", `spec: {image: busybox}`, "spec.command", "Required value"},
		{"command empty", `spec: {command: ""}`, "spec.command", ""},
		{"a user name", `spec: {command: id, execuser: nobody}`, "spec.execuser", "numeric UID or UID:GID"},
		{"user and group names", `spec: {command: id, execuser: "app:app"}`, "spec.execuser", "cannot look a user name up"},
		{"UID too large", `spec: {command: id, execuser: "4294967296"}`, "spec.execuser", "at most 2147483647"},
		{"GID too large", `spec: {command: id, execuser: "0:99999999999"}`, "spec.execuser", "at most 2147483647"},
		{"negative UID", `spec: {command: id, execuser: "-1"}`, "spec.execuser", "numeric UID"},
		{"relative working directory", `spec: {command: pwd, execcwd: tmp}`, "spec.execcwd", "absolute path"},
		{"env without =", `spec: {command: env, envs: [GREETING]}`, "spec.envs[0]", "NAME=value"},
		{"env without a name", `spec: {command: env, envs: ["=x"]}`, "spec.envs[0]", "NAME=value"},
		{"env name not printable", "spec: {command: env, envs: [\"A\\tB=1\"]}", "spec.envs[0]", "NAME=value"},
		{"env name twice", `spec: {command: env, envs: [A=1, B=2, A=3]}`, "spec.envs", "each name may appear only once"},
		{"too many envs", "spec: {command: env, envs: [" + manyEnvs + "]}", "spec.envs", "must have at most 64 items"},
		{"host not a label value", `spec: {command: hostname, host: "node 1"}`, "spec.host", "kubernetes.io/hostname label value"},
		{"host too long", "spec: {command: hostname, host: " + strings.Repeat("n", 64) + "}", "spec.host", "may not be more than 63"},
		{"request above limit", `spec: {command: "true", resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}`, "spec.resources.requests", "less than or equal to its limit"},
		{"unknown resource name", `spec: {command: "true", resources: {limits: {storage: 1Gi}}}`, "spec.resources.limits", "resource names must be"},
		{"extended resource overcommitted", `spec: {command: "true", resources: {requests: {example.com/gpu: 1}}}`, "spec.resources.requests", "cannot be overcommitted"},
		{"ServiceAccount name not a DNS name", `spec: {command: "true", serviceAccountName: Runner}`, "spec.serviceAccountName", ""},
		{"image with spaces", `spec: {command: "true", image: "busybox 1"}`, "spec.image", ""},
		{"deadline zero", `spec: {command: "true", activeDeadlineSeconds: 0}`, "spec.activeDeadlineSeconds", ""},
		{"negative TTL", `spec: {command: "true", ttlSecondsAfterFinished: -1}`, "spec.ttlSecondsAfterFinished", ""},
		{"name not a DNS label", "metadata: {name: run.once}\nspec: {command: \"true\"}", "metadata.name", "DNS-1123 label"},
	}
	for _, tc := range activityCases {
		t.Run("Activity "+tc.name, func(t *testing.T) {
			manifest := "apiVersion: app.example.com/v1\nkind: Activity\n" + tc.manifest + "\n"
			if !strings.Contains(tc.manifest, "metadata:") {
				manifest = "apiVersion: app.example.com/v1\nkind: Activity\nmetadata: {name: bad}\n" + tc.manifest + "\n"
			}
			refusedAsInvalid(t, "activities", ns, manifest, tc.field, tc.message)
		})
	}

	// The NotificationDestination's refusals, each naming its field.
	destinationCases := []struct {
		name, manifest, field, message string
	}{
		{"type missing", `spec: {secretRef: {name: hook}}`, "spec.type", "Required value"},
		{"type unknown", `spec: {type: discord, secretRef: {name: hook}}`, "spec.type", "Unsupported value"},
		{"secret missing", `spec: {type: slack}`, "spec.secretRef", "Required value"},
		{"secret name empty", `spec: {type: slack, secretRef: {name: ""}}`, "spec.secretRef.name", ""},
		{"secret name not a name", `spec: {type: slack, secretRef: {name: Hook_1}}`, "spec.secretRef.name", ""},
		{"edge unknown", `spec: {type: teams, secretRef: {name: hook}, edges: [Started, Paused]}`, "spec.edges[1]", "Unsupported value"},
		{"edge twice", `spec: {type: teams, secretRef: {name: hook}, edges: [Started, Started]}`, "spec.edges[1]", "Duplicate value"},
		{"selector operator", `spec: {type: webhook, secretRef: {name: hook}, selector: {matchExpressions: [{key: team, operator: Equals, values: [a]}]}}`,
			"spec.selector", "In or NotIn with values"},
		{"selector In without values", `spec: {type: webhook, secretRef: {name: hook}, selector: {matchExpressions: [{key: team, operator: In}]}}`,
			"spec.selector", "In or NotIn with values"},
	}
	for _, tc := range destinationCases {
		t.Run("NotificationDestination "+tc.name, func(t *testing.T) {
			manifest := "apiVersion: app.example.com/v1\nkind: NotificationDestination\nmetadata: {name: bad}\n" + tc.manifest + "\n"
			refusedAsInvalid(t, "notificationdestinations", ns, manifest, tc.field, tc.message)
		})
	}

	// Both kinds of analysis template refuse the same, each naming its
	// field.
	templateCases := []struct {
		name, manifest, field, message string
	}{
		{"argument unknown", `spec: {args: [{name: service}], metrics: [{name: rate, query: 'up{service="{{ args.svc }}"}', min: "1"}]}`,
			"spec.metrics", "a query uses an argument that spec.args does not declare"},
		{"argument declared twice", `spec: {args: [{name: service}, {name: service}], metrics: [{name: rate, query: up, min: "1"}]}`,
			"spec.args[1]", "Duplicate value"},
		{"two metrics of one name", `spec: {metrics: [{name: rate, query: up, min: "1"}, {name: rate, query: down, max: "1"}]}`,
			"spec.metrics[1]", "Duplicate value"},
		{"no metric", `spec: {metrics: []}`, "spec.metrics", "should have at least 1 items"},
	}
	for _, kind := range []struct{ kind, resource, namespace string }{
		{"AnalysisTemplate", "analysistemplates", ns}, {"ClusterAnalysisTemplate", "clusteranalysistemplates", ""},
	} {
		for _, tc := range templateCases {
			t.Run(kind.kind+" "+tc.name, func(t *testing.T) {
				manifest := "apiVersion: app.example.com/v1\nkind: " + kind.kind + "\nmetadata: {name: bad-" + ns + "}\n" + tc.manifest + "\n"
				refusedAsInvalid(t, kind.resource, kind.namespace, manifest, tc.field, tc.message)
			})
		}
	}

	t.Run("run-time failure is Degraded, not a crash", func(t *testing.T) {
		// 20000 is a valid port, but outside this cluster's node port range
		// (30000-32767): only the Service create can tell.
		createAppService(t, ns, "outofrange", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27",
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 20000}}})
		waitDegraded(t, ns, "outofrange", appv1.ReasonCreateFailed, "Service", "not in the valid range")
		waitEvent(t, ns, "outofrange", corev1.EventTypeWarning, appv1.ReasonCreateFailed, "not in the valid range")
		updateAppService(t, ns, "outofrange", func(as *appv1.AppService) { as.Spec.Ports[0].NodePort = 0 })
		waitAvailable(t, ns, "outofrange", 1)
		if _, err := getService(ns, "outofrange"); err != nil {
			t.Error(err)
		}
	})
}

// refusedAsInvalid posts manifest (YAML) to our API's resource, in
// namespace ns ("": a cluster-scoped kind), and checks that the API server
// refuses it as invalid, naming field and saying message.
func refusedAsInvalid(t *testing.T, resource, ns, manifest, field, message string) {
	t.Helper()
	req := apps.AppV1().RESTClient().Post().Resource(resource)
	if ns != "" {
		req = req.Namespace(ns)
	}
	err := req.SetHeader("Content-Type", "application/yaml").Body([]byte(manifest)).Do(context.Background()).Error()
	if err == nil {
		t.Fatalf("admitted:\n%s", manifest)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("refused, but not as invalid: %v", err)
	}
	if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), message) {
		t.Errorf("the error does not name %s (%q):\n%v", field, message, err)
	}
}
