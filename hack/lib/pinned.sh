# Sourced by the scripts that build a tool pinned in a Go module of hack/tools
# into _output/bin. The build is skipped while the module's go.mod and go.sum,
# the Go toolchain and any extra input files are unchanged: a stamp beside the
# binary holds their hash.
#
#   build_pinned NAME MODULE_DIR -- GO_BUILD_ARGS... [-- EXTRA_INPUT_FILES...]
#
# builds with `go build GO_BUILD_ARGS` run in MODULE_DIR (the args name the
# output and the packages) when the stamp _output/bin/.NAME-stamp is stale or
# any of the binaries named by BINARIES (default: NAME) is missing.
build_pinned() {
  local name=$1 mod=$2
  shift 3
  local args=() extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  extra=("$@")
  local bin="$root/_output/bin"
  mkdir -p "$bin"
  local stamp="$bin/.$name-stamp"
  local want have missing=0
  want=$(cat "$mod/go.mod" "$mod/go.sum" "${extra[@]}" "$(command -v go)" | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  for b in ${BINARIES:-$name}; do [ -x "$bin/$b" ] || missing=1; done
  if [ "$want" != "$have" ] || [ "$missing" = 1 ]; then
    echo "Building $name (a few minutes the first time) ..."
    local start
    start=$(date +%s)
    (cd "$mod" && go build "${args[@]}")
    echo "$want" > "$stamp"
    echo "Built $name in $(( $(date +%s) - start ))s."
  fi
}
