# utils/parse_options.sh -- Kaldi's option convention for our scripts; source it
# after setting the defaults:
#   nj=4; cmd=utils/run.sh
#   . utils/parse_options.sh
# Every "--name value" or "--name=value" at the front of "$@" sets the shell
# variable name (dashes become underscores) if it already exists, and is
# removed from "$@"; an unknown name is an error.  "--" ends the options.
# --help prints the script's leading comment block.
# (Kaldi's is utils/parse_options.sh; this one is ours, in bash only.)
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    --help|-h)
      sed -n '2,/^[^#]/{/^#/!d;s/^# \{0,1\}//;p}' "$0" >&2; exit 0 ;;
    --*=*)
      __name=${1%%=*}; __name=${__name#--}; __name=${__name//-/_}; __value=${1#*=}; shift ;;
    --*)
      __name=${1#--}; __name=${__name//-/_}
      if [ $# -lt 2 ]; then echo "$(basename "$0"): option $1 needs a value" >&2; exit 1; fi
      __value=$2; shift 2 ;;
    *) break ;;
  esac
  if ! [[ $__name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || [ -z "${!__name+set}" ]; then
    echo "$(basename "$0"): invalid option --${__name//_/-}" >&2; exit 1
  fi
  printf -v "$__name" '%s' "$__value"
done
unset __name __value
true
