#!/bin/sh
# scripts/check-tree.sh - fail when a tracked file is one that .gitignore
# excludes: editor and patch leftovers (*.orig, *.rej, *~, swap files, ...,
# the list is in .gitignore), or build output. `make check-tree` runs it,
# and `make test` runs that first.
#
# .gitignore keeps such files out of `git add .`, but not out of a commit
# that names them or adds them with -f, so the tracked files are checked
# against it as well. Only the repository's .gitignore files count, not the
# user's global excludes or .git/info/exclude, so the answer is the same on
# every machine.
#
# Outside a git checkout (a source tarball, or no git) nothing says which
# files are tracked: the check says so and passes.
#
# Usage: scripts/check-tree.sh [DIR]   (default: this script's repository)
set -eu

dir=${1:-$(dirname "$0")/..}

if ! command -v git >/dev/null 2>&1; then
    echo "check-tree: skipped: git is not installed"
    exit 0
fi
root=$(cd "$dir" && pwd -P)
# The checkout must be this tree itself, not one that happens to contain it
# (a tarball unpacked inside another repository).
top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null || true)
if [ "$top" != "$root" ]; then
    echo "check-tree: skipped: $root is not a git checkout"
    exit 0
fi

found=$(git -C "$top" ls-files --cached --ignored --exclude-per-directory=.gitignore)
if [ -n "$found" ]; then
    echo "check-tree: tracked files that .gitignore excludes (editor or patch" \
         "leftovers? remove them with git rm):" >&2
    printf '%s\n' "$found" | sed 's/^/  /' >&2
    exit 1
fi
echo "check-tree: ok, no tracked file matches .gitignore"
