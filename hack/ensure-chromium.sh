#!/usr/bin/env bash
# Installs Chromium from Debian's packages (chromium) when it is missing,
# and prints its path: the end-to-end test of kubectl appservice dashboard
# (TestDashboard) drives it headless with chromedp. No browser download of
# a test tool's own: the machine's package manager, as for any other
# program. About a minute on a new machine, nothing after.
#
# Usage: hack/ensure-chromium.sh          install it if missing, print its path
#        APPSERVICE_CHROMIUM=/path ...    use that browser instead (on
#                                         Ubuntu, whose chromium package is a
#                                         snap that does not run in a
#                                         container, say)
set -o errexit -o nounset -o pipefail

if [[ -n ${APPSERVICE_CHROMIUM:-} ]]; then
  echo "$APPSERVICE_CHROMIUM"
  exit 0
fi
# The font: the plugin's symbol for Gated and Suspended (॥, U+0965) is
# Devanagari, which Chromium's own fonts lack; without it the page and its
# screenshot in docs/ show a box.
packages=(chromium fonts-lohit-deva)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query --show --showformat='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if (( ${#missing[@]} == 0 )) && [[ -x /usr/bin/chromium ]]; then
  echo /usr/bin/chromium
  exit 0
fi
if ! command -v apt-get > /dev/null; then
  echo "ensure-chromium.sh: ${missing[*]} missing and no apt-get to install them: install Chromium and set APPSERVICE_CHROMIUM to its path" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) != 0 ]]; then
  sudo=(sudo)
fi
{
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
} >&2
echo /usr/bin/chromium
