# Options shared by the benchmark scripts that drive axion-sim, sourced by them:
#   [--axion-sim=PATH] [--steps=N] [-h|--help] [ARG ...]
# parse_bench_args "$@" sets axion_sim and steps where given (the caller sets their defaults
# first) and the other arguments, in order, into `positional`; --help prints the caller's
# header comment (lines 2-10) and exits.
parse_bench_args() {
  positional=()
  local arg
  for arg in "$@"; do
    case "$arg" in
      --axion-sim=*) axion_sim="${arg#*=}" ;;
      --steps=*) steps="${arg#*=}" ;;
      -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
      -*) echo "unknown argument: $arg" >&2; exit 2 ;;
      *) positional+=("$arg") ;;
    esac
  done
}
