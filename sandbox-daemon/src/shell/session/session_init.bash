# coved shell session bootstrap, sourced by an interactive bash through --rcfile.
#
# The terminal stays quiet: no echo of what coved types, no prompt. Completion is reported
# from PROMPT_COMMAND, which bash runs before every prompt, including after a Ctrl-C has
# aborted the whole command line. The exit status goes to a FIFO (the side channel); a
# marker carrying this session's secret goes to the terminal so coved knows where the
# command's output ends. A `start` report says when the shell has read a command line, so a
# signal is never sent while the line itself is still being read.
stty -echo -onlcr 2>/dev/null
set +o history
unset HISTFILE
readonly __COVE_MARK='@MARK@'
readonly __COVE_RC_FIFO='@FIFO@'

__cove_report() {
    local __cove_status=$?
    __cove_last=$__cove_status
    # A sourced script (a virtualenv's activate, say) may set a prompt; coved shows none.
    PS1='' PS2='' PS0=''
    if [[ -n ${__cove_seq-} ]]; then
        printf '\033]7777;%s;%s\007' "$__COVE_MARK" "$__cove_seq" >/dev/tty 2>/dev/null
        printf 'done %s %s\n' "$__cove_seq" "$__cove_status" >"$__COVE_RC_FIFO"
        __cove_seq=
        unset __cove_cmd
    fi
}

# Tells coved the shell has read the command line and is about to run it.
__cove_begin() { printf 'start %s\n' "$__cove_seq" >"$__COVE_RC_FIFO"; }

# Puts the previous command's status back in $? before the next one runs.
__cove_restore() { return "${__cove_last:-0}"; }

PS1='' PS2='' PS0=''
readonly PROMPT_COMMAND=__cove_report
__cove_seq=0
