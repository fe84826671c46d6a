{{/* The name of the release's objects: the release name, with the chart's
name appended unless it holds it already (trimmed to 63 characters). */}}
{{- define "appservice-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "appservice-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "appservice-controller.labels" -}}
{{ include "appservice-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "appservice-controller.subject" -}}
- kind: ServiceAccount
  name: {{ include "appservice-controller.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* What the controller needs on AppServices and their children, and
nothing more: the same rules as artifacts/deploy/rbac.yaml (the e2e test
compares them). */}}
{{- define "appservice-controller.rules" -}}
# Watch AppServices and write their status.
- apiGroups: ["app.example.com"]
  resources: ["appservices"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["app.example.com"]
  resources: ["appservices/status"]
  verbs: ["update"]
# Watch Activities and write their status; a finished one with a TTL is
# deleted once its Job is. A canary's tests are Activities the AppService
# owns: created, claimed (patched) and deleted with their canary.
- apiGroups: ["app.example.com"]
  resources: ["activities"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["app.example.com"]
  resources: ["activities/status"]
  verbs: ["update"]
# The analyses' templates, read (never written): a canary resolves those
# its AppService names. ClusterAnalysisTemplates are cluster-scoped: with
# watchNamespace, a ClusterRole of their own grants them (rbac.yaml).
- apiGroups: ["app.example.com"]
  resources: ["analysistemplates", "clusteranalysistemplates"]
  verbs: ["get", "list", "watch"]
# Where a release's edges are sent, and their Secrets: the leader reads a
# destination's Secret (get only, never listed nor cached) when it posts.
- apiGroups: ["app.example.com"]
  resources: ["notificationdestinations"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
# The children. Patch brings the owned fields in line, and adds or removes
# an owner reference. The one Deployment the controller deletes is a
# canary's, once it ends.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services", "serviceaccounts"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes", "grpcroutes"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# The Gateways a route attaches to, and their classes: the features a
# class supports, read when a release needs a mirror, sticky users or a
# GRPCRoute.
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways", "gatewayclasses"]
  verbs: ["get"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# rolloutOnConfigChange: ConfigMaps and Secrets watched as metadata and read
# when they change, for the digest of their data; never written.
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get", "list", "watch"]
# An Activity's Job: created, claimed and patched like the AppService's
# children, never deleted (the garbage collector does it, or its TTL). Its
# Pod is listed once, when the run fails, for the command's exit code.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
# Events through the broadcaster (it patches to count repeats).
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- end -}}
