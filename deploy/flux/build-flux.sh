#!/usr/bin/env bash
# Build flux-core, Fluxion (flux-sched) and flux-coral2's dws-jobtap.so from the pinned
# release sources into a cache outside the clone, keyed by the sources' hash; print the
# prefix. A second run with the same sources prints it at once.
#
#   FLUX_SOURCES=DIR   a directory holding the three tarballs (and SHA256SUMS); without it,
#                      the pinned tags are downloaded from GitHub
#   FLUX_CACHE=DIR     where prefixes live (default ~/.cache/coral2-pipeline)
#   FLUX_FLUXION=0     build flux-core and dws-jobtap.so only (sched-simple schedules)
#
# Debian's build dependencies are installed with apt-get when missing (root or sudo).
set -euo pipefail

CORE=flux-core-0.88.0
SCHED=flux-sched-0.54.0
CORAL2=flux-coral2-0.36.0
CACHE=${FLUX_CACHE:-$HOME/.cache/coral2-pipeline}
FLUXION=${FLUX_FLUXION:-1}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

say() { echo "make flux: $*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
pinned="$here/SHA256SUMS"   # the tarballs this project is pinned to
# the cache key: the pinned checksums, so a warm cache needs no sources at all
key=$(sha256sum <"$pinned" | cut -c1-16)
prefix="$CACHE/flux-$key$([ "$FLUXION" = 1 ] || echo -core)"
# flux-coral2's plugins are compiled alone (a second or so) and stamped by this recipe's
# own hash, so changing which ones we build does not rebuild flux-core and Fluxion
PLUGINS="dws-jobtap dws_environment cray-slingshot"
recipe=$(sed -n '/^build_plugins()/,/^}/p' "$0" | cat - <(echo "$PLUGINS") | sha256sum | cut -c1-12)
plugins_done="$prefix/.plugins-$recipe"
if [ -f "$prefix/.complete" ] && [ -f "$plugins_done" ]; then
    echo "$prefix"
    exit 0
fi

sources=${FLUX_SOURCES:-}
if [ -z "$sources" ]; then
    sources="$CACHE/sources"
    mkdir -p "$sources"
    for pair in "flux-core v0.88.0 $CORE" "flux-sched v0.54.0 $SCHED" "flux-coral2 v0.36.0 $CORAL2"; do
        set -- $pair
        [ -s "$sources/$3.tar.gz" ] || {
            say "downloading $1 $2"
            curl -fsSL -o "$sources/$3.tar.gz" \
                "https://github.com/flux-framework/$1/archive/refs/tags/$2.tar.gz" \
                || { say "cannot download $1 $2; set FLUX_SOURCES to a directory of the tarballs"; exit 1; }
        }
    done
fi
sources=$(cd "$sources" && pwd)
for name in $CORE $SCHED $CORAL2; do
    [ -s "$sources/$name.tar.gz" ] || { say "$sources/$name.tar.gz is missing"; exit 1; }
done
(cd "$sources" && sha256sum --quiet -c "$pinned") \
    || { say "the tarballs in $sources are not the pinned ones ($pinned)"; exit 1; }

deps="autoconf automake libtool make pkg-config libc6-dev libzmq3-dev uuid-dev libjansson-dev
liblz4-dev libarchive-dev libhwloc-dev libsqlite3-dev libncurses-dev lua5.1 liblua5.1-0-dev
lua-posix python3-dev python3-cffi python3-ply python3-setuptools python3-yaml jq time ccache"
[ "$FLUXION" = 1 ] && deps="$deps libboost-dev libboost-graph-dev libedit-dev libyaml-cpp-dev
python3-jsonschema ninja-build cmake"
missing=$(for p in $deps; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
    say "installing build dependencies: $(echo $missing)"
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq $missing >/dev/null; } \
        || { say "could not install $(echo $missing) (need root or sudo and Debian's apt)"; exit 1; }
fi

# flux-coral2's dws-jobtap.so (the job-manager plugin that sends dws.*), and its two
# job-shell plugins: dws_environment.so (DW_JOB_* into the job's environment) and
# cray-slingshot.so (SLINGSHOT_* from the cray-slingshot event; built without libcxi, it
# finds no CXI devices, as on a node without Cassini NICs)
build_plugins() {
    local src="$1/$CORAL2" shell="$prefix/lib/flux/shell/plugins"
    tar xzf "$sources/$CORAL2.tar.gz" -C "$1"
    mkdir -p "$1/config" "$shell" && : >"$1/config/config.h"
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    local flags libs
    flags="-O2 -fPIC -shared -D_GNU_SOURCE -I$1/config -I$src -I$src/src/common/libccan"
    flags="$flags $(pkg-config --cflags flux-core flux-hostlist flux-idset jansson)"
    libs="$(pkg-config --libs flux-core flux-hostlist flux-idset jansson) -lm"
    # shellcheck disable=SC2086
    gcc $flags -o "$prefix/lib/flux/job-manager/plugins/dws-jobtap.so" \
        "$src/src/job-manager/plugins/dws-jobtap.c" $libs
    for plugin in dws_environment cray-slingshot; do
        # shellcheck disable=SC2086
        gcc $flags -o "$shell/$plugin.so" "$src/src/shell/plugins/$plugin.c" \
            "$src/src/common/libutil/eventlog.c" "$src/src/common/libutil/errprintf.c" $libs
    done
    # the releases this prefix holds, for `demo --flux real` and the docs' figures
    printf '{"flux-core": "%s", "flux-sched": "%s", "flux-coral2": "%s"}\n' \
        "${CORE#flux-core-}" "${SCHED#flux-sched-}" "${CORAL2#flux-coral2-}" \
        >"$prefix/coral2-pipeline-versions.json"
    rm -f "$prefix"/.plugins-*
    touch "$plugins_done"
}

if [ -f "$prefix/.complete" ]; then
    say "flux-coral2's plugins into $prefix"
    work=$(mktemp -d)
    build_plugins "$work" || { say "flux-coral2's plugins failed to build"; exit 1; }
    rm -rf "$work"
    echo "$prefix"
    exit 0
fi

build="$prefix.build"
rm -rf "$build" "$prefix"
mkdir -p "$build"
export PATH="/usr/lib/ccache:$PATH" CCACHE_BASEDIR="$build" CCACHE_NOHASHDIR=true
export PYTHON=/usr/bin/python3
started=$(date +%s)

say "flux-core into $prefix"
tar xzf "$sources/$CORE.tar.gz" -C "$build"
(
    cd "$build/$CORE"
    FLUX_VERSION=0.88.0 ./autogen.sh >"$build/core-autogen.log" 2>&1
    ./configure --prefix="$prefix" --disable-docs >"$build/core-configure.log" 2>&1
    make -j"$(nproc)" >"$build/core-make.log" 2>&1
    make install >"$build/core-install.log" 2>&1
) || { say "flux-core failed; see $build/core-*.log"; exit 1; }


say "flux-coral2's plugins"
build_plugins "$build" || { say "flux-coral2's plugins failed to build"; exit 1; }

if [ "$FLUXION" = 1 ]; then
    say "Fluxion"
    tar xzf "$sources/$SCHED.tar.gz" -C "$build"
    (
        cd "$build/$SCHED"
        echo 0.54.0 >flux-sched.ver
        cmake -G Ninja -DCMAKE_INSTALL_PREFIX="$prefix" -DPython_EXECUTABLE=/usr/bin/python3 \
            -B build >"$build/sched-cmake.log" 2>&1
        ninja -C build -j"$(nproc)" >"$build/sched-ninja.log" 2>&1
        ninja -C build install >"$build/sched-install.log" 2>&1
    ) || { say "Fluxion failed; see $build/sched-*.log"; exit 1; }
fi

rm -rf "$build"
echo "built in $(( $(date +%s) - started )) s from $sources" >"$prefix/.complete"
say "done in $(( $(date +%s) - started )) s"
echo "$prefix"
