//! Process hardening of `ctx serve` (seed 004 §3, "Process isolation"): no core dumps,
//! no ptrace attach by other processes of the same user, and on Linux Landlock —
//! the filesystem confined to the repository and ctx's config folder, and no TCP
//! connect or new bind. Applied before any worker thread exists, so every thread of
//! the server inherits it. Each step reports what it achieved; nothing is claimed
//! that the kernel did not confirm.

use std::path::PathBuf;

/// What one hardening step achieved.
pub struct Step {
    pub name: &'static str,
    pub in_effect: bool,
    pub detail: String,
}

/// Disable core dumps (RLIMIT_CORE = 0) and, on Linux, mark the process non-dumpable,
/// which also refuses ptrace attach from other non-root processes of the user.
pub fn no_dumps() -> Vec<Step> {
    let mut out = Vec::new();
    #[cfg(unix)]
    {
        let lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit with a valid, initialised struct.
        let ok = unsafe { libc::setrlimit(libc::RLIMIT_CORE, &lim) } == 0;
        out.push(Step {
            name: "core dumps",
            in_effect: ok,
            detail: if ok {
                "disabled (RLIMIT_CORE = 0)".into()
            } else {
                format!("could not be disabled: {}", std::io::Error::last_os_error())
            },
        });
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_DUMPABLE, 0) takes no pointers.
        let ok = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } == 0;
        out.push(Step {
            name: "process inspection",
            in_effect: ok,
            detail: if ok {
                "not dumpable: other processes of this user cannot ptrace it or read /proc/PID/mem (root still can)".into()
            } else {
                format!("PR_SET_DUMPABLE failed: {}", std::io::Error::last_os_error())
            },
        });
    }
    #[cfg(not(target_os = "linux"))]
    out.push(Step {
        name: "process inspection",
        in_effect: false,
        detail: "no ptrace protection on this platform".into(),
    });
    out
}

/// Raise the soft limit of open files to the hard limit: every connection is a
/// descriptor, and the connection cap of [`super::door`] is set below this limit.
/// Returns the step and the soft limit now in effect.
pub fn open_files() -> (Step, Option<u64>) {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit with a valid, initialised struct.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            let e = std::io::Error::last_os_error();
            return (
                Step {
                    name: "open files",
                    in_effect: false,
                    detail: format!("the limit cannot be read: {e}"),
                },
                None,
            );
        }
        let before = lim.rlim_cur;
        // An unlimited hard limit is not a valid soft one for descriptors on Linux.
        let target = if lim.rlim_max == libc::RLIM_INFINITY {
            before.max(1 << 20)
        } else {
            lim.rlim_max
        };
        let raised = target > before && {
            let want = libc::rlimit {
                rlim_cur: target,
                rlim_max: lim.rlim_max,
            };
            // SAFETY: setrlimit with a valid, initialised struct.
            unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 }
        };
        let now = if raised { target } else { before };
        let detail = if raised {
            format!("limit raised from {before} to {now} (the hard limit)")
        } else if target > before {
            format!(
                "limit {now}: could not be raised to {target}: {}",
                std::io::Error::last_os_error()
            )
        } else {
            format!("limit {now} (already the hard limit)")
        };
        #[allow(clippy::useless_conversion)]
        let now = u64::try_from(now).ok();
        (
            Step {
                name: "open files",
                in_effect: true,
                detail,
            },
            now,
        )
    }
    #[cfg(not(unix))]
    (
        Step {
            name: "open files",
            in_effect: false,
            detail: "no descriptor limit to raise on this platform".into(),
        },
        None,
    )
}

/// Confine the filesystem to `paths` (read-write beneath each) and forbid TCP
/// connect/bind, where the kernel supports it.
#[cfg(all(target_os = "linux", feature = "serve"))]
pub fn confine(paths: &[PathBuf]) -> Vec<Step> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };
    let abi = ABI::V6;
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let result = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(paths, AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self());
    match result {
        Ok(s) => {
            let abi_text = match s.landlock {
                LandlockStatus::Available { effective_abi, .. } => {
                    format!("Landlock ABI {}", effective_abi as i32)
                }
                LandlockStatus::NotEnabled => "Landlock is not enabled in this kernel".into(),
                LandlockStatus::NotImplemented => "Landlock is not built into this kernel".into(),
            };
            let net = matches!(s.landlock, LandlockStatus::Available { effective_abi, .. } if effective_abi as i32 >= 4);
            let fs_on = s.ruleset != RulesetStatus::NotEnforced;
            vec![
                Step {
                    name: "filesystem",
                    in_effect: fs_on,
                    detail: if fs_on {
                        format!(
                            "confined to {} ({abi_text}{})",
                            shown.join(" and "),
                            if s.ruleset == RulesetStatus::PartiallyEnforced {
                                ", partially: some access kinds are not known to this kernel"
                            } else {
                                ""
                            }
                        )
                    } else {
                        format!("not confined: {abi_text}")
                    },
                },
                Step {
                    name: "network",
                    in_effect: fs_on && net,
                    detail: if fs_on && net {
                        "no outbound TCP connection and no new listening port (Landlock)".into()
                    } else {
                        "outbound connections are not blocked by the kernel (needs Landlock ABI 4, Linux 6.7); ctx serve itself never connects".into()
                    },
                },
            ]
        }
        Err(e) => vec![Step {
            name: "filesystem",
            in_effect: false,
            detail: format!("Landlock could not be applied: {e}"),
        }],
    }
}

#[cfg(not(all(target_os = "linux", feature = "serve")))]
pub fn confine(_paths: &[PathBuf]) -> Vec<Step> {
    vec![Step {
        name: "filesystem",
        in_effect: false,
        detail: "no filesystem confinement on this platform (Landlock is Linux-only)".into(),
    }]
}

/// What is never in effect, said plainly.
pub fn limitations() -> Vec<&'static str> {
    vec![
        "no seccomp filter: system calls are not restricted beyond Landlock",
        "root (and the kernel) can still read the server's memory",
        "key material is mlocked where the OS allows; decrypted values are held in wipe-on-drop buffers but response buffers are not wiped",
        "worker threads started before confinement would not be confined: ctx serve confines itself before starting any",
    ]
}
