# appservice-controller. `make help` lists the targets.

# The controller's binary.
BIN ?= bin/appservice-controller
# The kubectl plugin's binary (kubectl appservice): beside the controller's.
PLUGIN_BIN ?= $(dir $(BIN))kubectl-appservice
# kubectl for install/uninstall; any kubectl that reaches your cluster.
KUBECTL ?= kubectl
# Extra flags for the controller in `make run`, e.g. ARGS="-v=2 -workers=4".
ARGS ?=
# The controller's image, for docker-build, docker-push and deploy.
IMG ?= appservice-controller:latest
# A container tool for docker-build (needs a running engine).
CONTAINER_TOOL ?= docker

GO_TEST_FLAGS ?=

# One build configuration for every Go build and test below, the image's:
# static (CGO_ENABLED=0) and without the checkout's paths (-trimpath). A
# package built with other settings is compiled again; with these, the Go
# build cache compiles each package once for the binary, the tests, the
# image and the tools (hack/build-env.sh, which the hack/ensure-*.sh
# scripts source, says the same).
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

# The version stamped into the binary (-version, appservice_controller_build_info),
# in the variables the Kubernetes components use. It must start with vX.Y.Z:
# component-base's metrics registry parses it. Untagged: v0.0.0-<commit>.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.0.0-$$(git describe --always --dirty 2>/dev/null || echo unknown))
# The commit's time, not the clock's: the same commit builds the same binary
# (and image digest).
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS := -X $(VERSION_PKG).gitVersion=$(VERSION) \
	-X $(VERSION_PKG).gitCommit=$(shell git rev-parse HEAD 2>/dev/null || echo unknown) \
	-X $(VERSION_PKG).gitTreeState=$(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo clean || echo dirty) \
	-X $(VERSION_PKG).buildDate=$(BUILD_DATE)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Regenerate deepcopy, clientset, listers, informers, apply configurations and the CRD.
	./hack/update-codegen.sh

.PHONY: manifests
manifests: generate ## Regenerate the CRDs (artifacts/examples/crd.yaml, crd-activity.yaml, crd-analysistemplate.yaml, crd-clusteranalysistemplate.yaml, crd-notificationdestination.yaml); same generator run as `generate`.

.PHONY: verify
verify: ## Fail if anything generated is stale, or git tracks a binary or a file over 1 MiB.
	./hack/verify-tracked-files.sh
	./hack/verify-codegen.sh

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet, including the e2e and admission-property tests (build tag e2e).
	go vet ./...
	go vet -tags e2e ./test/...

.PHONY: build
build: ## Build the controller and the kubectl plugin (kubectl appservice) into bin/.
	go build -ldflags "$(LDFLAGS)" -o $(BIN) .
	go build -ldflags "$(LDFLAGS)" -o $(PLUGIN_BIN) ./cmd/kubectl-appservice

.PHONY: build-plugin
build-plugin: ## Build the kubectl plugin only (PLUGIN_BIN, bin/kubectl-appservice); put it on the PATH for kubectl appservice.
	go build -ldflags "$(LDFLAGS)" -o $(PLUGIN_BIN) ./cmd/kubectl-appservice

.PHONY: print-ldflags
print-ldflags: ## Print build's -ldflags (the version stamp); test/binsize links with them, -dumpdep added.
	@echo '$(LDFLAGS)'

# Where the krew archives are published: their URLs in the manifest.
KREW_BASE_URL ?= https://example.com/appservice-controller/releases/download/$(VERSION)
# The platforms make krew builds for, OS/ARCH,... (empty: linux, darwin and
# windows on amd64 and arm64); e.g. linux/amd64 for a local install.
KREW_PLATFORMS ?=

.PHONY: krew
krew: ## Build the plugin for linux, darwin and windows (amd64, arm64) into tar.gz archives under _output/krew, and their krew manifest _output/krew/appservice.yaml (from artifacts/krew/appservice.yaml; URLs under KREW_BASE_URL).
	go run ./hack/krew -template artifacts/krew/appservice.yaml -out _output/krew -version $(VERSION) \
	  -base-url $(KREW_BASE_URL) -ldflags "$(LDFLAGS)" -mtime $(BUILD_DATE) $(if $(KREW_PLATFORMS),-platforms $(KREW_PLATFORMS))

.PHONY: binaries
binaries: ## Build the local control plane's binaries (cached outside the tree; ~25 min the first time).
	./hack/ensure-binaries.sh

# With KUBECONFIG set (environment or `make run KUBECONFIG=...`), run against
# that cluster; without, start a local control plane and run against it.
.PHONY: run
run: build ## Run the controller: against $KUBECONFIG if set, else on a local control plane.
ifneq ($(strip $(KUBECONFIG)),)
	$(BIN) -kubeconfig "$(KUBECONFIG)" $(ARGS)
else
	@bin_dir=$$(./hack/ensure-binaries.sh) && \
	  go build -o bin/localcluster ./hack/localcluster && \
	  exec bin/localcluster -bin-dir "$$bin_dir" -- $(BIN) $(ARGS)
endif

# A narrated tour with kubectl (hack/demo): on a local control plane with the
# controller built here, or, with KUBECONFIG set, on that cluster, where a
# controller must be running (make run, make deploy). DEMO_LANG=zh narrates
# in Chinese. APPSERVICE_PROMETHEUS is the Prometheus server the canary's
# analysis queries (hack/ensure-prometheus.sh builds it).
.PHONY: demo
demo: build ## A narrated kubectl tour of the controller and its plugin (kubectl appservice, from bin/): on a local control plane, or KUBECONFIG's cluster (DEMO_LANG=zh in Chinese).
	@go build -o bin/demo ./hack/demo
ifneq ($(strip $(KUBECONFIG)),)
	prometheus=$$(./hack/ensure-prometheus.sh) && \
	  PATH="$(abspath $(dir $(PLUGIN_BIN))):$$PATH" APPSERVICE_PROMETHEUS="$$prometheus" bin/demo -kubectl "$(KUBECTL)"
else
	@bin_dir=$$(./hack/ensure-binaries.sh) && \
	  prometheus=$$(./hack/ensure-prometheus.sh) && \
	  go build -o bin/localcluster ./hack/localcluster && \
	  PATH="$(abspath $(dir $(PLUGIN_BIN))):$$PATH" APPSERVICE_PROMETHEUS="$$prometheus" bin/localcluster -bin-dir "$$bin_dir" -- bin/demo -kubectl "$$bin_dir/kubectl" -controller $(BIN)
endif

##@ Tests

# The steps of make test, in order; each prints how long it took and the
# CPU it used (hack/make-at-once.sh), so that a step growing slower shows
# in every run (.ci/run prints them again at the end, with the slowest
# end-to-end tests), and the end prints the sum of the CPU. Those of
# TEST_STEPS run one by one, then those of TEST_STEPS_AT_ONCE at once (the
# end-to-end tests, the demo and the admission property tests each with a
# control plane of its own, and the race detector's build of the unit
# tests' dependencies, niced: TEST_BUILD_NICE), then those of
# TEST_STEPS_AFTER one by one (the unit tests, on their own); those of
# TEST_STEPS_NICE run beside all of them, from the start, at a lower
# priority: the end-to-end tests wait on leases, resyncs and API servers
# with part of a core idle, and the steps one by one leave some idle too,
# which they use. Only work with no deadline of its own can run at the
# lower priority: niced, an API server on a busy machine is not ready
# within the 90 s the tests allow.
TEST_STEPS := lint verify helm-lint test-monitoring test-crd-paths
TEST_STEPS_AT_ONCE := test-e2e test-demo test-admission test-race-deps
TEST_STEPS_AFTER := test-race
TEST_STEPS_NICE := test-fuzz

# make test vets once: its first step, lint, runs golangci-lint's govet,
# which has every analyzer of go vet's, over every package, its tests, the
# e2e-tagged ones and the generated code (.golangci.yml). So make test has
# no go vet step (make vet is the same pass again: 150 CPU-seconds on a new
# machine), and it sets TEST_VET=-vet=off for its go test runs, which would
# vet again with a subset of those analyzers (in the race detector's build,
# whose compiled dependencies differ, over every dependency once more: 120
# CPU-seconds). A target run alone vets as go test does.
TEST_VET ?=

.PHONY: test
test: ## Everything CI runs: lint (go vet's analyzers among its linters), generated files, the Helm chart's lint, the alert rules' tests, the CRD's install paths; then end-to-end tests, the demo, admission-property tests and the race detector's build at once; then unit tests (the docs' checks among them); fuzzing beside all of them from the start; each step's time.
	@export TEST_VET=-vet=off TEST_BUILD_NICE='nice -n 10' && mkdir -p _output/make-test && : > _output/make-test/cpu && start=$$(date +%s) && \
	./hack/make-at-once.sh --one-by-one $(TEST_STEPS) --at-once $(TEST_STEPS_AT_ONCE) --one-by-one $(TEST_STEPS_AFTER) --nice $(TEST_STEPS_NICE) && \
	awk -v s=$$(( $$(date +%s) - start )) -v cores=$$(nproc) '{ n += $$3 } END { printf "make test: %d s, CPU %d s (on %d cores no order of the steps ends in less than %d s)\n", s, n, cores, n / cores }' _output/make-test/cpu

# Both lint with the build tag e2e, which only adds files: no file of the
# project is built only without it (//go:build !e2e), so one pass covers
# every file, the e2e and property tests among them; lint fails if one is.
.PHONY: lint
lint: ## golangci-lint (.golangci.yml; the e2e tests too) and logcheck (structured, contextual logging), built from their Go modules (hack/ensure-lint.sh).
	@bin=$$(./hack/ensure-lint.sh) && set -e && \
	if git grep -lE '^//go:build .*!e2e' -- '*.go'; then echo "lint: the files above build only without the tag e2e, which lint sets" >&2; exit 1; fi && \
	$$bin/golangci-lint run ./... && \
	$$bin/logcheck -check-contextual -tags e2e ./...

CHART := charts/appservice-controller

.PHONY: helm-lint
helm-lint: ## Lint and render the Helm chart with its defaults and with every option (helm built from its Go module); check its values schema refuses a bad value.
	@helm=$$(./hack/ensure-helm.sh) && set -e && \
	$$helm lint --strict $(CHART) && \
	$$helm lint --strict $(CHART) --set watchNamespace=apps,crd.install=false,serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,networkPolicy.enabled=true,metrics.certSecret=metrics-tls,logging.format=json,extraArgs={--workers=8} && \
	$$helm lint --strict $(CHART) --set metrics.enabled=false,leaderElection.enabled=false,networkPolicy.enabled=true && \
	$$helm template check $(CHART) --set serviceMonitor.enabled=true,networkPolicy.enabled=true > /dev/null && \
	if out=$$($$helm template check $(CHART) --set logging.format=xml 2>&1); then \
	  echo "helm-lint: the values schema accepted logging.format=xml" >&2; exit 1; \
	else echo "$$out" | grep -q "/logging/format" || { echo "$$out" >&2; exit 1; }; fi

.PHONY: test-unit
test-unit: ## The fast tests (no cluster), fuzz seeds and any kept failing inputs included.
	go test $(GO_TEST_FLAGS) ./...

# The packages whose code starts goroutines of its own: the controllers,
# their machinery (workers, informers, leader election, the servers), the
# plugin and its dashboard. make test runs their tests under the race
# detector, which needs cgo: a C compiler (gcc) on the machine.
RACE_PKGS := . ./internal/... ./cmd/...

# A command before test-race-deps' build: make test sets "nice -n 10", for
# it runs that build beside the end-to-end tests, the demo and the
# admission property tests, on what they leave idle.
TEST_BUILD_NICE ?=

.PHONY: test-race-deps
test-race-deps: ## Build under the race detector (cgo, gcc) every package test-race's tests import but theirs (about 1,100, most of the race build's CPU), into the Go build cache.
	@command -v "$$(CGO_ENABLED=1 go env CC)" > /dev/null || { echo "test-race: the race detector needs cgo's C compiler ($$(CGO_ENABLED=1 go env CC)): apt-get install gcc" >&2; exit 1; }
	@export CGO_ENABLED=1 && deps=$$(go list -race -deps -test -f '{{if not .ForTest}}{{if ne .Name "main"}}{{.ImportPath}}{{end}}{{end}}' $(RACE_PKGS)) && \
	  $(TEST_BUILD_NICE) go build -race $$deps

.PHONY: test-race
test-race: test-race-deps ## make test's unit step: the tests of RACE_PKGS under the race detector (cgo, gcc), the other packages' as test-unit runs them.
	CGO_ENABLED=1 go test -race $(TEST_VET) $(GO_TEST_FLAGS) $(RACE_PKGS)
	race=$$(go list $(RACE_PKGS)) && go test $(TEST_VET) $(GO_TEST_FLAGS) $$(go list ./... | grep -vxF "$$race")

.PHONY: test-monitoring
test-monitoring: ## The alert rules' unit tests (promtool test rules), and every query of the rules and the dashboard parsed by Prometheus (promtool built from its Go module).
	APPSERVICE_PROMTOOL=$$(./hack/ensure-promtool.sh) go test $(TEST_VET) -tags e2e -count=1 $(GO_TEST_FLAGS) ./test/monitoring

# By default a count of inputs each, about 30 s here: with a duration,
# Go 1.26's fuzzing can fail a run that found nothing with "context deadline
# exceeded" when the time runs out mid-input (golang/go#75804, fixed in Go
# 1.27). FUZZTIME (e.g. 10m or 500000x) sets both.
FUZZTIME ?=
.PHONY: test-fuzz
test-fuzz: ## Fuzz the builders (80000 inputs), then the status (100000), or each for FUZZTIME; a failing input is kept in that package's testdata/fuzz.
	go test $(TEST_VET) -run '^$$' -fuzz '^FuzzBuilders$$' -fuzztime $(or $(FUZZTIME),80000x) ./internal/children
	go test $(TEST_VET) -run '^$$' -fuzz '^FuzzStatus$$' -fuzztime $(or $(FUZZTIME),100000x) ./internal/appstatus

.PHONY: test-crd-paths
test-crd-paths: ## What each install path (kubectl client- and server-side, the controller, Helm 4, Argo CD- and Flux-style, cert-manager) leaves on the CRD, on an API server of its own; fails when one needs more than the CRD's reserve. Alone: its CRD writes cost CPU the end-to-end tests' waits would miss.
	APPSERVICE_BIN_DIR=$$(./hack/ensure-binaries.sh) APPSERVICE_E2E_GROUP=alone go test $(TEST_VET) -tags e2e -count=1 -timeout 15m -run '^TestCRDInstallPaths$$' $(GO_TEST_FLAGS) ./test/e2e

.PHONY: test-admission
test-admission: ## Property tests: every AppService and Activity the CRDs admit yields children the API server accepts, every analysis template they admit resolves; and it finds each container rule removed.
	APPSERVICE_BIN_DIR=$$(./hack/ensure-binaries.sh) go test $(TEST_VET) -tags e2e -count=1 -timeout 20m -run '^(TestAdmissionProperty(FindsMissingRules)?|TestActivityAdmissionProperty|TestAnalysisTemplateAdmissionProperty)$$' $(GO_TEST_FLAGS) ./test/admission

.PHONY: test-demo
test-demo: ## make demo on a local control plane, straight through, in Chinese; fails when a step does not end as narrated.
	DEMO_LANG=zh $(MAKE) --no-print-directory demo KUBECONFIG= < /dev/null

.PHONY: verify-docs
verify-docs: ## The docs against the code: the Chinese files in step with the English, every name they use exists (metrics and kubectl flags: in test-e2e).
	go test -count=1 -run '^TestDocs' ./test/docs ./internal/docscheck

# Flags for the e2e test binary (hack/test-e2e.sh), e.g. E2E_FLAGS=-test.run=TestSeedManifest.
E2E_FLAGS ?=
# How many tests of the e2e's parallel group run at once.
E2E_PARALLEL ?= 8

.PHONY: test-e2e
test-e2e: ## End-to-end and fault tests: the built controller against local control planes (and a Prometheus server for canary analysis, built from its Go module), the two lanes of serial tests and the parallel group at once (hack/test-e2e.sh).
	APPSERVICE_BIN_DIR=$$(./hack/ensure-binaries.sh) APPSERVICE_PROMETHEUS=$$(./hack/ensure-prometheus.sh) APPSERVICE_CHROMIUM=$$(./hack/ensure-chromium.sh) E2E_PARALLEL=$(E2E_PARALLEL) ./hack/test-e2e.sh $(filter -v,$(GO_TEST_FLAGS)) $(E2E_FLAGS)

# Busy processes per core, and loops of cold builds, beside the tests in
# test-e2e-loaded.
E2E_LOAD ?= 2
E2E_BUILD_LOAD ?= 1

.PHONY: test-e2e-loaded
test-e2e-loaded: ## The end-to-end tests on a loaded machine: E2E_LOAD (2) busy processes per core and E2E_BUILD_LOAD (1) loops of builds from an empty Go cache beside them, the parallel group 12 at a time. A test that passes only on an idle machine fails here first.
	APPSERVICE_BIN_DIR=$$(./hack/ensure-binaries.sh) APPSERVICE_PROMETHEUS=$$(./hack/ensure-prometheus.sh) APPSERVICE_CHROMIUM=$$(./hack/ensure-chromium.sh) E2E_PARALLEL=12 E2E_LOAD=$(E2E_LOAD) E2E_BUILD_LOAD=$(E2E_BUILD_LOAD) ./hack/test-e2e.sh $(filter -v,$(GO_TEST_FLAGS)) $(E2E_FLAGS)

##@ Cluster

.PHONY: install
install: ## Install the CRDs (AppService, Activity) into the cluster of $KUBECONFIG.
	$(KUBECTL) apply -f artifacts/examples/crd.yaml -f artifacts/examples/crd-activity.yaml -f artifacts/examples/crd-analysistemplate.yaml -f artifacts/examples/crd-clusteranalysistemplate.yaml -f artifacts/examples/crd-notificationdestination.yaml

.PHONY: uninstall
uninstall: ## Remove the CRDs (and with them every AppService and Activity) from the cluster.
	$(KUBECTL) delete --ignore-not-found -f artifacts/examples/crd.yaml -f artifacts/examples/crd-activity.yaml -f artifacts/examples/crd-analysistemplate.yaml -f artifacts/examples/crd-clusteranalysistemplate.yaml -f artifacts/examples/crd-notificationdestination.yaml

.PHONY: deploy
deploy: ## Deploy the controller (artifacts/deploy: namespace, RBAC, 2 replicas, metrics Service) with image IMG.
	@mkdir -p _output/deploy
	@printf 'resources:\n- ../../artifacts/deploy\n' > _output/deploy/kustomization.yaml
	go build -o bin/kustomize sigs.k8s.io/kustomize/kustomize/v5
	cd _output/deploy && ../../bin/kustomize edit set image appservice-controller=$(IMG)
	$(KUBECTL) apply -k _output/deploy

# Optional kustomize components for build-installer, from artifacts/components:
# COMPONENTS="network-policy service-monitor".
COMPONENTS ?=
# Where build-installer writes install.yaml.
DIST ?= dist

.PHONY: build-installer
build-installer: ## Write $(DIST)/install.yaml: the CRDs, namespace, RBAC and controller (image IMG, -install-crd=false) for one kubectl apply -f.
	@rm -rf _output/installer && mkdir -p _output/installer $(DIST)
	@{ printf 'resources:\n- ../../artifacts/install\n'; \
	  [ -z "$(strip $(COMPONENTS))" ] || printf 'components:\n'; \
	  for c in $(COMPONENTS); do printf -- '- ../../artifacts/components/%s\n' "$$c"; done; \
	} > _output/installer/kustomization.yaml
	cd _output/installer && go tool kustomize edit set image appservice-controller=$(IMG)
	{ cat artifacts/examples/crd.yaml artifacts/examples/crd-activity.yaml artifacts/examples/crd-analysistemplate.yaml artifacts/examples/crd-clusteranalysistemplate.yaml artifacts/examples/crd-notificationdestination.yaml; echo '---'; go tool kustomize build _output/installer; } > $(DIST)/install.yaml
	@echo "wrote $(DIST)/install.yaml (image $(IMG)); install with: kubectl apply -f $(DIST)/install.yaml"

.PHONY: undeploy
undeploy: ## Remove what deploy created (the CRD and the AppServices stay: see uninstall).
	$(KUBECTL) delete --ignore-not-found -k artifacts/deploy

##@ Image

# Where make image writes the OCI image layout.
IMAGE_DIR ?= _output/image
# The platforms make image builds for (comma-separated); empty: a release's,
# linux/amd64 and linux/arm64 (hack/image's default).
PLATFORMS ?=

.PHONY: image
image: ## Build the image without a container engine (go-containerregistry): static binaries for PLATFORMS on an empty base, user 65532, as an OCI image layout in IMAGE_DIR, validated.
	go run ./hack/image -out $(IMAGE_DIR) $(if $(PLATFORMS),-platforms $(PLATFORMS)) -ldflags "$(LDFLAGS)" -version $(VERSION) \
	  -revision $$(git rev-parse HEAD 2>/dev/null) -created $(BUILD_DATE)

.PHONY: image-push
image-push: ## Push the image in IMAGE_DIR (make image) to IMG, with the credentials of ~/.docker/config.json.
	go run ./hack/image -out $(IMAGE_DIR) -push $(IMG)

.PHONY: docker-build
docker-build: ## Build the controller's image IMG (Dockerfile; needs a container engine).
	$(CONTAINER_TOOL) build --build-arg LDFLAGS="$(LDFLAGS)" -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image IMG.
	$(CONTAINER_TOOL) push $(IMG)

##@ Benchmarks

# The earlier commit whose controller the backlog also runs under, in the
# same turns (-baseline; hack/build-baseline.sh builds it): 5bdf953 is the
# controller the limit's goal was met with (BENCHMARKS.md). Empty: none.
BASELINE ?= 5bdf953

.PHONY: bench
bench: build ## Benchmarks against a local control plane, beside BASELINE's controller and side by side with a kubebuilder-style peer (~145 min): results in _output/bench, see BENCHMARKS.md.
	go build -o bin/peer ./test/bench/peer
	baseline=$$($(if $(BASELINE),./hack/build-baseline.sh $(BASELINE))) && \
	  APPSERVICE_BIN_DIR=$$(./hack/ensure-binaries.sh) go run ./test/bench -controller $(BIN) -peer bin/peer -out _output/bench \
	  $${baseline:+-baseline "$$baseline" -baseline-name $(BASELINE)} $(BENCH_FLAGS)
	go test -run '^$$' -bench '^Benchmark(Objects|Scrape)$$' -benchmem ./internal/metrics
	go test -run '^$$' -bench '^BenchmarkDecode$$' -benchmem ./internal/appcache
	go test -run '^$$' -bench '^BenchmarkCachesHeld$$' -benchtime 3x .
