//! `coved --confine`: walls the daemon puts around itself, and so around everything it
//! starts, before any thread exists. Landlock lets it and its children write only under the
//! given folders (read anywhere it can see); a seccomp filter refuses the system calls a
//! sandboxed agent has no use for and a kernel exploit would (new user namespaces, kernel
//! keyrings, BPF, io_uring, module loading, mounts). The local sandbox's namespaces are the
//! boundary; these hold where a namespace's view alone would not (a bind left writable, a
//! kernel bug reached through a rare system call). Where the kernel lacks Landlock, its part
//! is skipped and said.

use std::collections::BTreeMap;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// How far the walls went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// Landlock enforced fully, partly (an older kernel), or not at all.
    pub landlock: &'static str,
    /// System calls refused.
    pub syscalls_refused: usize,
}

/// Why the walls could not be put up.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("cannot restrict the file system with Landlock: {0}")]
    Landlock(String),
    #[error("cannot install the seccomp filter: {0}")]
    Seccomp(String),
}

/// Closes this process to others of its user. The agent's processes run as coved's user:
/// without this they could read coved's environment and memory (its token) and attach to
/// it (its listening socket, which is of the network outside). Its children are dumpable
/// again once they exec.
pub fn undumpable() -> Result<(), ConfineError> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| ConfineError::Seccomp(format!("cannot make coved undumpable: {e}")))
}

/// Restricts this process and its future children: writes only under `writable`, and the
/// system calls of [`refused_calls`] refused. Call before any other thread starts.
pub fn confine(writable: &[PathBuf]) -> Result<Confined, ConfineError> {
    undumpable()?;
    let landlock = restrict_files(writable)?;
    let refused = refused_calls();
    let syscalls_refused = refused.len() + 1;
    install(refused, libc::EPERM)?;
    // clone3 takes its flags in memory a filter cannot read: refusing it as unknown makes
    // the C library fall back to clone, whose flags the filter above reads.
    install(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
    )?;
    Ok(Confined {
        landlock,
        syscalls_refused,
    })
}

fn restrict_files(writable: &[PathBuf]) -> Result<&'static str, ConfineError> {
    let abi = ABI::V5;
    let fail = |e: &dyn std::fmt::Display| ConfineError::Landlock(e.to_string());
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(
            writable.iter().filter(|p| p.exists()),
            AccessFs::from_all(abi),
        ))
        .map_err(|e| fail(&e))?
        .restrict_self()
        .map_err(|e| fail(&e))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced",
        RulesetStatus::PartiallyEnforced => "partly enforced (an older kernel)",
        RulesetStatus::NotEnforced => "not available in this kernel",
    })
}

/// The system calls refused with `EPERM`, some only with the arguments that matter.
pub fn refused_calls() -> BTreeMap<i64, Vec<SeccompRule>> {
    let always = [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_setns,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_lookup_dcookie,
        libc::SYS_vhangup,
        libc::SYS_iopl,
        libc::SYS_ioperm,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        always.into_iter().map(|call| (call, Vec::new())).collect();
    // New namespaces (a user namespace first of all) only through a flag of these two.
    let new_namespaces = (libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP) as u64;
    for call in [libc::SYS_clone, libc::SYS_unshare] {
        rules.insert(call, flag_rules(0, new_namespaces));
    }
    // Typing into the terminal another process reads; compared on 32 bits, as the kernel
    // reads the command (high bits set would slip past a 64-bit comparison).
    rules.insert(
        libc::SYS_ioctl,
        condition(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(libc::TIOCSTI as u32),
        ),
    );
    rules
}

/// One rule per flag of `flags`: the call matches when argument `arg` has any of them.
fn flag_rules(arg: u8, flags: u64) -> Vec<SeccompRule> {
    (0..64)
        .map(|bit| 1u64 << bit)
        .filter(|bit| flags & bit != 0)
        .flat_map(|bit| {
            condition(
                arg,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )
        })
        .collect()
}

fn condition(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> Vec<SeccompRule> {
    SeccompCondition::new(arg, len, op, value)
        .and_then(|c| SeccompRule::new(vec![c]))
        .into_iter()
        .collect()
}

fn install(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<(), ConfineError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| ConfineError::Seccomp(e.to_string()))?;
    seccompiler::apply_filter(&program).map_err(|e| ConfineError::Seccomp(e.to_string()))
}
