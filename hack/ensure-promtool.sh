#!/usr/bin/env bash
# Builds promtool from Prometheus's Go module once and prints its path: make
# test runs `promtool test rules` with it. hack/ensure-prometheus.sh builds
# it, as it builds the server, from the same pinned module into the same
# cache.
#
# Usage: hack/ensure-promtool.sh         build it if missing, print its path
#        APPSERVICE_CACHE=/path ...      use another cache root
exec "$(dirname "${BASH_SOURCE[0]}")/ensure-prometheus.sh" promtool
