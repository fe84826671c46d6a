#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MiB (generated code
# included) or a binary (a file with a NUL byte). Builds go to bin/ or
# _output/, which .gitignore keeps out of the repository.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

limit=$((1024 * 1024))
status=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue # deleted in the work tree
  size=$(stat -c %s "$f")
  if (( size > limit )); then
    echo "tracked file over 1 MiB: $f ($size bytes)" >&2
    status=1
  elif grep -qP '\x00' "$f"; then
    echo "tracked binary file: $f" >&2
    status=1
  fi
done < <(git ls-files -z)
if (( status )); then
  echo "Remove these from git (git rm --cached) and ignore them in .gitignore." >&2
  exit 1
fi
echo "No binaries or files over 1 MiB tracked."
