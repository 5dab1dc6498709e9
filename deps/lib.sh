# deps/lib.sh — what the scripts of deps/ share. Sourced, not run.
#
#   private_apt DIR TYPE [SUITE_FROM SUITE_TO [ARCH]]
#       Sets APT_OPTS (an array for apt-get/apt-cache) to a private apt
#       configuration in DIR: this machine's own sources
#       (/etc/apt/sources.list.d/debian.sources, no host name typed here) as
#       TYPE (deb or deb-src), suite SUITE_FROM renamed SUITE_TO, for ARCH
#       only; then runs apt-get update. The system's apt setup never changes.
#       Returns 1 when the machine has no apt or no such sources file.
#
#   fetch_release TARBALL SHA256 ENV_VAR URL DEBIAN_FN
#       Puts a release tarball at TARBALL, taken from, in order: the path in
#       $ENV_VAR (a user's copy), the cache (TARBALL itself), DEBIAN_FN (a
#       function that writes TARBALL from Debian's source package), URL where
#       the internet is reachable. Its sha256 must be SHA256, checked every
#       time; exits 1 with what it tried when no source has it.
#
#   debian_orig PACKAGE VERSION TARBALL APT_DIR
#       Writes TARBALL from Debian 13's (trixie) source package PACKAGE at
#       upstream VERSION: only its .orig tarball, through a private apt
#       configuration in APT_DIR (removed after). Returns 1 when it cannot.
#
#   lock_file FILE
#       Holds an exclusive lock on FILE (on descriptor 9) until the script
#       exits: one build at a time per cache folder. flock(1) where there is
#       one (Linux); macOS has none, and perl's flock on the same descriptor
#       does the same (the lock belongs to the open file, which the shell
#       keeps).
#
# MSVC mode (Windows from source, .github/workflows/windows.yml): a script
# given --cc cl (or CC=cl) or --host x86_64-pc-windows-msvc builds with cl
# and lib.exe in Git for Windows' bash, after the Visual Studio environment
# is set (cl, lib, nmake on PATH). Its build folder is one of its own
# (triple x86_64-pc-windows-msvc); every other target's key is unchanged.
#
#   msvc_select
#       Reads the script's cc and host. When cc is cl (cl or cl.exe, in any
#       folder) or host a *-windows-msvc triple: sets msvc=1, host (default
#       x86_64-pc-windows-msvc: cl has no -dumpmachine) and cc (cl when it
#       was the default cc), and exports MSYS_NO_PATHCONV=1, so that Git's
#       bash hands the arguments of native programs over as written (it
#       would rewrite /nonexistent/... or /MT as a path under its root).
#       Otherwise sets msvc to empty and changes nothing.
#
#   native_path PATH
#       PATH as a Windows program reads it (C:/...), by cygpath where there
#       is one (Git's bash); PATH as given elsewhere (Linux, macOS, and the
#       check on Linux, scripts/msvc-deps-check.js). Every script prints its
#       build folder through it.
#
#   msvc_archive CC AR DIR LIB FLAGS... -- FILES...
#       In DIR, compiles each FILE (a path relative to DIR) with
#       CC -nologo -c FLAGS -Fo<obj> -Tc<file> and archives the objects as
#       DIR/LIB with AR -nologo -out:LIB, then removes them. cl's options
#       are spelled with '-' (cl takes both), and files relative to DIR, so
#       no argument starts with '/': Git's bash leaves them alone, and
#       clang-cl on Linux does not read /work/... as an option. cl's and
#       lib's own output (cl echoes each file name) goes to stderr.
#
# On macOS, which has neither sha256sum nor nproc, functions of those names
# stand in (shasum -a 256, sysctl hw.ncpu) with the same output, so that
# the scripts and their cache keys are the same everywhere.
#
# They log on stderr through log(), which the caller defines.

if ! command -v sha256sum >/dev/null 2>&1; then
  sha256sum() { shasum -a 256 "$@"; }
fi
if ! command -v nproc >/dev/null 2>&1; then
  nproc() { sysctl -n hw.ncpu; }
fi

lock_file() { # FILE
  exec 9>"$1"
  if command -v flock >/dev/null 2>&1; then
    flock 9
  else
    perl -MFcntl=:flock -e 'open(my $f, ">&=", 9) or die "fd 9: $!"; flock($f, LOCK_EX) or die "flock: $!"'
  fi
}

# The contents of every file forced in by "-include FILE" in the given
# flags (the glibc floor header): part of a build's cache key, so that a
# changed header rebuilds what it was compiled into.
included_files() { # FLAGS
  local prev= w
  for w in $1; do
    [ "$prev" = "-include" ] && cat "$w"
    prev=$w
  done
  return 0
}

# The flags as a build's cache key reads them: a file forced in by
# "-include FILE" by its base name (its contents are in the key:
# included_files), so that two checkouts of the same code (a worktree, a
# bench --compare baseline) with one SYMPHONY_CACHE_DIR share their builds.
key_flags() { # FLAGS
  local prev= w out=
  for w in $1; do
    if [ "$prev" = "-include" ]; then out="$out ${w##*/}"; else out="$out $w"; fi
    prev=$w
  done
  printf '%s' "${out# }"
}

sha_matches() { # FILE SHA256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

private_apt() {
  local dir=$1 type=$2 from=${3:-} to=${4:-} arch=${5:-}
  local src=/etc/apt/sources.list.d/debian.sources
  command -v apt-get >/dev/null 2>&1 && [ -f "$src" ] || return 1
  rm -rf "$dir"
  mkdir -p "$dir/parts" "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/dl"
  sed -e "s/^Types:.*\$/Types: $type/" "$src" > "$dir/parts/main.sources"
  if [ -n "$from" ]; then
    sed -i -e "s/\\b$from\\b/$to/g" "$dir/parts/main.sources"
  fi
  : > "$dir/status"
  APT_OPTS=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$dir/parts"
            -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
            -o "Dir::State::status=$dir/status" -o APT::Sandbox::User=root)
  if [ -n "$arch" ]; then
    APT_OPTS+=(-o "APT::Architecture=$arch" -o "APT::Architectures::=$arch")
  fi
  apt-get "${APT_OPTS[@]}" update >&2
}

fetch_release() {
  local tarball=$1 sha=$2 var=$3 url=$4 debian=$5
  local given=${!var:-}
  if [ -n "$given" ]; then
    if ! sha_matches "$given" "$sha"; then
      echo "$(basename "$0"): $var=$given is missing or its sha256 is not $sha" >&2
      exit 1
    fi
    log "tarball from $var"
    cp "$given" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
    return 0
  fi
  if sha_matches "$tarball" "$sha"; then
    log "tarball from the cache ($tarball)"
    return 0
  fi
  rm -f "$tarball"
  if "$debian" && sha_matches "$tarball" "$sha"; then
    log "tarball from Debian's source package (.orig, sha256 verified)"
    return 0
  fi
  rm -f "$tarball"
  log "Debian's source package unavailable; trying the upstream release"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$tarball.tmp" "$url" && mv "$tarball.tmp" "$tarball" || rm -f "$tarball.tmp"
  fi
  if ! sha_matches "$tarball" "$sha"; then
    rm -f "$tarball"
    cat >&2 <<MSG
$(basename "$0"): could not obtain $(basename "$tarball") with sha256 $sha.
  Tried: \$$var (unset), the cache ($tarball),
         Debian's source package, and $url.
  Set $var to a downloaded copy of the release tarball.
MSG
    exit 1
  fi
}

debian_orig() {
  local pkg=$1 version=$2 tarball=$3 apt=$4 ver
  private_apt "$apt" deb-src bookworm trixie || return 1
  ver=$(apt-cache "${APT_OPTS[@]}" showsrc "$pkg" | awk -v v="$version" '/^Version: /{ if (index($2, v "-") == 1) { print $2; exit } }')
  [ -n "$ver" ] || return 1
  # Only the .orig tarball matters (the Debian parts are not used).
  (cd "$apt/dl" && apt-get "${APT_OPTS[@]}" source --download-only --tar-only "$pkg=$ver" >&2 ||
                   apt-get "${APT_OPTS[@]}" source --download-only "$pkg=$ver" >&2) || true
  local orig="$apt/dl/${pkg}_${version}.orig.tar.gz"
  [ -f "$orig" ] || return 1
  cp "$orig" "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
  rm -rf "$apt"
}

msvc_select() { # sets msvc, host, cc (the calling script's)
  msvc=
  case "$(basename "$cc")" in
    cl | cl.exe) ;;
    *) case "$host" in *-windows-msvc) ;; *) return 0 ;; esac ;;
  esac
  msvc=1
  host=${host:-x86_64-pc-windows-msvc}
  [ "$cc" = cc ] && cc=cl
  export MSYS_NO_PATHCONV=1
}

native_path() { # PATH
  if command -v cygpath >/dev/null 2>&1; then cygpath -m "$1"; else echo "$1"; fi
}

msvc_archive() { # CC AR DIR LIB FLAGS... -- FILES...
  local cc=$1 ar=$2 dir=$3 lib=$4 flags=() objs=() f o
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  for f in "$@"; do
    o="$(echo "${f%.c}" | tr / _).obj"
    (cd "$dir" && "$cc" -nologo -c "${flags[@]}" "-Fo$o" "-Tc$f") >&2
    objs+=("$o")
  done
  (cd "$dir" && "$ar" -nologo "-out:$lib" "${objs[@]}") >&2
  (cd "$dir" && rm -f "${objs[@]}")
}
