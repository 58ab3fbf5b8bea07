#!/bin/sh
# Fill the Homebrew formula template for one release and print it:
#
#   packaging/homebrew/render.sh VERSION SHA256SUMS [REPOSITORY] > ctx.rb
#
# SHA256SUMS is the release's (`<sha256>  <file>` lines). Every archive the formula
# names must be listed there exactly once, or nothing is printed and the exit code is 1.
set -eu

die() {
  echo "error: $*" >&2
  exit 1
}

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: render.sh VERSION SHA256SUMS [REPOSITORY]" >&2
  exit 2
fi
version=${1#v}
sums=$2
repository=${3:-ctx-dev/ctx}
template="$(dirname "$0")/ctx.rb.in"

case $version in
  "" | *[!0-9A-Za-z.+-]*) die "\`$version\` is not a release version (expected e.g. 0.1.0)" ;;
esac
case $repository in
  */*/* | /* | */ | *[!0-9A-Za-z._/-]*) die "\`$repository\` is not a GitHub repository (expected OWNER/NAME)" ;;
  */*) ;;
  *) die "\`$repository\` is not a GitHub repository (expected OWNER/NAME)" ;;
esac
[ -f "$sums" ] || die "$sums: no such file"

edits="s|@VERSION@|$version|g; s|@REPOSITORY@|$repository|g"
for target in aarch64-apple-darwin x86_64-apple-darwin aarch64-unknown-linux-musl x86_64-unknown-linux-musl; do
  file="ctx-$target.tar.gz"
  sha=$(awk -v f="$file" '$2 == f || $2 == "*" f { print $1 }' "$sums")
  case $sha in
    "") die "$file is not listed in $sums" ;;
    *[!0-9a-f]* | *"
"*) die "$sums has no single valid SHA-256 line for $file" ;;
  esac
  [ ${#sha} -eq 64 ] || die "$sums has a malformed SHA-256 for $file: $sha"
  edits="$edits; s|@SHA256:$target@|$sha|g"
done

formula=$(sed -e "$edits" "$template")
case $formula in
  *@*@*) die "the template has a placeholder render.sh does not fill: $(printf '%s\n' "$formula" | grep -n '@[^@ ]*@' | head -1)" ;;
esac
printf '%s\n' "$formula"
