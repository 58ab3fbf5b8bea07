#!/bin/sh
# Install a released ctx binary without a Rust toolchain: download the archive for
# this OS and CPU from a GitHub release, check it against the release's SHA256SUMS,
# and put `ctx` in ~/.local/bin (or $CTX_INSTALL_DIR). It never asks for root: a
# folder you cannot write is an error, and you choose another with --to.
#
#   curl -fsSL https://github.com/ctx-dev/ctx/releases/latest/download/install.sh | sh
#   sh install.sh --version 0.1.0 --to /usr/local/bin
#
# Environment (the options win):
#   CTX_VERSION             release to install, e.g. 0.1.0 (default: the latest)
#   CTX_INSTALL_DIR         folder for the binary (default: ~/.local/bin)
#   CTX_INSTALL_REPOSITORY  GitHub repository publishing the releases (default: ctx-dev/ctx)
#   CTX_INSTALL_BASE_URL    folder URL holding the assets (https:// or file://), instead
#                           of the GitHub release; for mirrors and offline tests
#
# The archive names are those .github/workflows/release.yml publishes.
set -eu

repository="${CTX_INSTALL_REPOSITORY:-ctx-dev/ctx}"
version="${CTX_VERSION:-}"
dir="${CTX_INSTALL_DIR:-}"
base="${CTX_INSTALL_BASE_URL:-}"

die() {
  echo "error: $*" >&2
  exit 1
}

usage() {
  cat <<'EOF'
Install a released ctx binary (checksum-verified) into ~/.local/bin.

usage: install.sh [--version VERSION] [--to DIR]

  --version VERSION   the release to install, e.g. 0.1.0 (default: the latest)
  --to DIR            where to put `ctx` (default: $CTX_INSTALL_DIR, else ~/.local/bin)
  -h, --help          this help
EOF
}

while [ $# -gt 0 ]; do
  case $1 in
    --version) [ $# -ge 2 ] || die "--version needs a value, e.g. --version 0.1.0"; version=$2; shift 2 ;;
    --version=*) version=${1#--version=}; shift ;;
    --to) [ $# -ge 2 ] || die "--to needs a folder, e.g. --to ~/.local/bin"; dir=$2; shift 2 ;;
    --to=*) dir=${1#--to=}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; echo >&2; die "unknown argument \`$1\`" ;;
  esac
done

version=${version#v}
case $version in
  *[!0-9A-Za-z.+-]*) die "\`$version\` is not a release version (expected e.g. 0.1.0)" ;;
esac

if [ -z "$dir" ]; then
  [ -n "${HOME:-}" ] || die "HOME is not set; choose a folder with --to DIR or CTX_INSTALL_DIR"
  dir="$HOME/.local/bin"
fi

# The release target for this machine. Linux binaries are static (musl): they run on
# any distribution, glibc or not.
os=$(uname -s)
arch=$(uname -m)
case $arch in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
esac
ext=tar.gz
exe=ctx
case $os/$arch in
  Linux/x86_64 | Linux/aarch64) target=$arch-unknown-linux-musl ;;
  Darwin/x86_64 | Darwin/aarch64)
    # An Intel shell under Rosetta on Apple silicon: install the native binary.
    if [ "$arch" = x86_64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
      arch=aarch64
    fi
    target=$arch-apple-darwin
    ;;
  MINGW*/x86_64 | MSYS*/x86_64 | CYGWIN*/x86_64) target=x86_64-pc-windows-msvc; ext=zip; exe=ctx.exe ;;
  *) die "no prebuilt ctx for $os/$(uname -m); build it from source with a Rust toolchain (README: Set up)" ;;
esac
asset="ctx-$target.$ext"

if [ -z "$base" ]; then
  if [ -n "$version" ]; then
    base="https://github.com/$repository/releases/download/v$version"
  else
    base="https://github.com/$repository/releases/latest/download"
  fi
fi
base=${base%/}
case $base in
  https://* | file://*) ;;
  *) die "CTX_INSTALL_BASE_URL must start with https:// or file:// (got \`$base\`)" ;;
esac

# Only https (and file:// when asked for), and never a redirect to anything else.
download() {
  if command -v curl >/dev/null 2>&1; then
    curl --fail --silent --show-error --location --retry 3 \
      --proto '=https,file' --proto-redir '=https' -o "$2" "$1" ||
      die "could not download $1"
  elif command -v wget >/dev/null 2>&1; then
    case $1 in
      https://*) wget --quiet --https-only -O "$2" "$1" || die "could not download $1" ;;
      *) die "wget downloads https:// URLs only, not $1; install curl" ;;
    esac
  else
    die "neither curl nor wget is installed; install one and run this again"
  fi
}

if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
else
  die "neither sha256sum nor shasum is installed, so a download cannot be verified; install one (coreutils or perl)"
fi

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t ctx-install)
staged=""
cleanup() {
  rm -rf "$tmp"
  if [ -n "$staged" ]; then rm -f "$staged"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "downloading $base/$asset" >&2
download "$base/SHA256SUMS" "$tmp/SHA256SUMS"
download "$base/$asset" "$tmp/$asset"

# Verify before unpacking: the archive must be listed exactly once, and match.
expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
case $expected in
  "") die "$asset is not listed in $base/SHA256SUMS; refusing to install it" ;;
  *[!0-9a-f]* | *"
"*) die "$base/SHA256SUMS has no single valid SHA-256 line for $asset; refusing to install it" ;;
esac
[ ${#expected} -eq 64 ] || die "$base/SHA256SUMS has a malformed SHA-256 for $asset: $expected"
actual=$(sha256 "$tmp/$asset")
if [ "$actual" != "$expected" ]; then
  die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; refusing to install it (nothing was changed)"
fi

case $ext in
  zip)
    command -v unzip >/dev/null 2>&1 || die "unzip is needed to unpack $asset"
    unzip -q "$tmp/$asset" -d "$tmp"
    ;;
  *) tar -xzf "$tmp/$asset" -C "$tmp" ;;
esac
binary="$tmp/ctx-$target/$exe"
[ -f "$binary" ] || die "$asset holds no ctx-$target/$exe"

mkdir -p "$dir" 2>/dev/null || die "cannot create $dir; choose a folder you can write with --to DIR (or CTX_INSTALL_DIR)"
[ -w "$dir" ] || die "$dir is not writable by you; choose another folder with --to DIR (this script never uses sudo; run it with sudo yourself if you mean to)"

# Copy beside the destination, check that it runs, then rename: an existing ctx is
# replaced in one step, or left alone.
staged="$dir/.$exe.install.$$"
cp "$binary" "$staged"
chmod 755 "$staged"
installed_version=$("$staged" --version 2>&1) || die "the downloaded ctx does not run on this machine: $installed_version"
mv -f "$staged" "$dir/$exe"
staged=""

echo "installed $installed_version to $dir/$exe"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) echo "note: $dir is not on your PATH; add it, e.g. export PATH=\"$dir:\$PATH\"" >&2 ;;
esac
