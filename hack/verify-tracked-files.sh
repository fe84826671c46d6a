#!/usr/bin/env bash
# Fails when git tracks a build output: a file over 1 MiB (generated code
# included) or a binary (a file with a NUL byte). Builds go to bin/ or
# _output/, which .gitignore keeps out of the repository. The docs'
# pictures are the one kind of binary kept: a PNG under docs/images/, of
# 256 KiB at most (a screenshot a test made, such as TestDashboard's).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

limit=$((1024 * 1024))

# has_nul reads stdin and succeeds when it holds a NUL byte. grep needs -a:
# without it, GNU grep reads a binary file's NULs as line ends and never
# matches one.
has_nul() { LC_ALL=C grep -qaP '\x00'; }

# The check checks itself first, so that no grep of another make can turn
# it into one that always passes.
if ! printf 'ELF\0\0' | has_nul || printf 'plain text\n' | has_nul; then
  echo "verify-tracked-files: this grep cannot tell binary files from text" >&2
  exit 1
fi

status=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue # deleted in the work tree
  size=$(stat -c %s "$f")
  if [[ $f == docs/images/*.png ]]; then
    if [[ $(head -c 8 "$f" | od -An -tx1 | tr -d ' \n') != 89504e470d0a1a0a ]] || (( size > 256 * 1024 )); then
      echo "docs picture not a PNG of 256 KiB at most: $f ($size bytes)" >&2
      status=1
    fi
  elif (( size > limit )); then
    echo "tracked file over 1 MiB: $f ($size bytes)" >&2
    status=1
  elif has_nul < "$f"; then
    echo "tracked binary file: $f" >&2
    status=1
  fi
done < <(git ls-files -z)
if (( status )); then
  echo "Remove these from git (git rm --cached) and ignore them in .gitignore." >&2
  exit 1
fi
echo "No binaries or files over 1 MiB tracked."
