#!/bin/sh
# Write the pre-commit mirror repository for one release into a folder (created if
# needed; only the three files below are written):
#
#   packaging/pre-commit/render.sh VERSION DIR [REPOSITORY [MIRROR]]
#
# DIR/.pre-commit-hooks.yaml, DIR/pyproject.toml (pinning ctx-opencontext==VERSION) and
# DIR/README.md. REPOSITORY publishes ctx (default ctx-dev/ctx); MIRROR is the mirror's
# own GitHub name (default ctx-dev/ctx-pre-commit), shown in its README.
set -eu

die() {
  echo "error: $*" >&2
  exit 1
}

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
  echo "usage: render.sh VERSION DIR [REPOSITORY [MIRROR]]" >&2
  exit 2
fi
version=${1#v}
out=$2
repository=${3:-ctx-dev/ctx}
mirror=${4:-ctx-dev/ctx-pre-commit}
here=$(dirname "$0")

case $version in
  "" | *[!0-9A-Za-z.+-]*) die "\`$version\` is not a release version (expected e.g. 0.1.0)" ;;
esac
for name in "$repository" "$mirror"; do
  case $name in
    */*/* | /* | */ | *[!0-9A-Za-z._/-]*) die "\`$name\` is not a GitHub repository (expected OWNER/NAME)" ;;
    */*) ;;
    *) die "\`$name\` is not a GitHub repository (expected OWNER/NAME)" ;;
  esac
done

mkdir -p "$out"
edits="s|@VERSION@|$version|g; s|@REPOSITORY@|$repository|g; s|@MIRROR@|$mirror|g"
cp "$here/.pre-commit-hooks.yaml" "$out/.pre-commit-hooks.yaml"
sed -e "$edits" "$here/pyproject.toml.in" > "$out/pyproject.toml"
sed -e "$edits" "$here/README.md.in" > "$out/README.md"
if grep -n '@[A-Z0-9_]*@' "$out/pyproject.toml" "$out/README.md" >&2; then
  die "a template placeholder is left unfilled (above)"
fi
