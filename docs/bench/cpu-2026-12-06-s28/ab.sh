# The warm deplodock.compile of warm_api.py, BASE (a commit) against the working tree,
# N rounds interleaved, each from a wheel installed in a folder of its own (both with
# bytecode), each with a cache it filled first.  bash ab.sh [BASE] [N]
set -e
BASE=${1:-fbb3227} N=${2:-5} HERE=$(cd "$(dirname "$0")" && pwd) T=$(mktemp -d)
cd "$(git -C "$HERE" rev-parse --show-toplevel)"
git worktree add -q "$T/base-src" "$BASE"
pip wheel -q --no-deps -w "$T/wb" "$T/base-src" && pip install -q --no-deps --target "$T/base" "$T"/wb/*.whl
pip wheel -q --no-deps -w "$T/wn" . && pip install -q --no-deps --target "$T/new" "$T"/wn/*.whl
git worktree remove --force "$T/base-src"
for v in base new; do DEPLODOCK_CACHE_DIR=$T/c-$v PYTHONPATH=$T/$v python "$HERE/warm_api.py" > /dev/null 2>&1; done
for i in $(seq "$N"); do for v in base new; do
  echo "$v $(DEPLODOCK_CACHE_DIR=$T/c-$v PYTHONPATH=$T/$v python "$HERE/warm_api.py" 2>/dev/null | grep RESULT)"
done; done | sort
