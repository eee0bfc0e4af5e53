# coved shell session bootstrap for a POSIX shell without bash (busybox ash, dash), read
# through $ENV when the interactive shell starts.
#
# As with bash (session_init.bash): no echo, no visible prompt; completion is reported when
# the shell prompts again. Such shells have no PROMPT_COMMAND, but they expand command
# substitutions in PS1 before every prompt, and `$?` there is the last command's status.
# The substitution runs in a subshell, so it cannot clear the sequence number: a prompt with
# no new command repeats the last report, which coved ignores.
stty -echo -onlcr 2>/dev/null
__COVE_MARK='@MARK@'
__COVE_RC_FIFO='@FIFO@'

__cove_report() {
    __cove_status=$?
    if [ -n "${__cove_seq-}" ]; then
        printf '\033]7777;%s;%s\007' "$__COVE_MARK" "$__cove_seq" >/dev/tty 2>/dev/null
        printf 'done %s %s\n' "$__cove_seq" "$__cove_status" >"$__COVE_RC_FIFO"
    fi
}

# Tells coved the shell has read the command line and is about to run it.
__cove_begin() { printf 'start %s\n' "$__cove_seq" >"$__COVE_RC_FIFO"; }

PS2=''
PS1='$(__cove_report)'
__cove_seq=0
unset ENV
