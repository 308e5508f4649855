//! `culprit lock`: lock contention, with perf's verbs. `record` is `culprit record` with the
//! lock tracepoints and call chains ([`record_flags`]); `contention` reads that file or
//! perf's: kernel locks from `lock:contention_begin/end` with call chains, and user locks
//! (pthread mutexes, condition variables) from futex waits with user stacks
//! (`culprit_analysis::lock`).

use culprit_analysis::lock::{self, LockJson, LockOptions, LockReport, LOCK_SCHEMA};
use culprit_symbols::{ProfileInput, ReadPlan};

use crate::stopped::{render_via, ReadReport};

/// The tracepoints `culprit lock record` records.
pub const LOCK_EVENTS: &[&str] = &[
    "lock:contention_begin",
    "lock:contention_end",
    "syscalls:sys_enter_futex",
    "syscalls:sys_exit_futex",
];

/// The scheduler events `culprit lock record --states` adds: a thread's states need its
/// switches in and out, which only a system-wide recording has (a task's switch-in is
/// recorded in the context of the task it replaces).
pub const STATE_EVENTS: &[&str] = &["sched:sched_switch", "sched:sched_waking"];

/// The `culprit record` flags of `culprit lock record` (besides its own `-o`, `-m`, `-q` and
/// command): `-c 1 -g -e <LOCK_EVENTS>[,<STATE_EVENTS>] [-a]`. System-wide when asked
/// (`all_cpus`), with the thread states (`states`, which need every CPU), or without a
/// command to run (`!has_command`).
pub fn record_flags(all_cpus: bool, states: bool, has_command: bool) -> Vec<String> {
    let mut events = LOCK_EVENTS.to_vec();
    if states {
        events.extend(STATE_EVENTS);
    }
    let mut flags: Vec<String> = ["-c", "1", "-g", "-e"].map(String::from).to_vec();
    flags.push(events.join(","));
    if all_cpus || states || !has_command {
        flags.push("-a".to_string());
    }
    flags
}

/// What `culprit lock contention` reads and shows.
#[derive(Debug, Clone)]
pub struct ContentionOptions {
    /// The input, with where its symbols are found.
    pub input: ProfileInput,
    /// Kernel call-chain frames to skip (perf's `--stack-skip`).
    pub stack_skip: usize,
    /// Waiter stacks shown per futex.
    pub top_stacks: usize,
}

/// The contention report of one input, and how its reading ended.
pub type Contention = ReadReport<LockReport>;

/// `culprit lock contention`: per call site (kernel locks) and per futex (user locks), the
/// waits and their times. Streamed: only per-lock state is kept, so an endless stdin stays
/// bounded. Fails when the file has no lock or futex samples.
pub fn contention(options: &ContentionOptions) -> anyhow::Result<Contention> {
    let input = &options.input;
    let mut sym = input.symbolizer();
    let lock_options = LockOptions {
        stack_skip: options.stack_skip,
        lock_text: sym.kernel_lock_text(),
        top_stacks: options.top_stacks,
    };
    let mut contention = lock::LockContention::new(&mut sym, &lock_options);
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| contention.sample(profile, sample),
    )?;
    let report = contention.finish(&profile)?;
    Ok(ReadReport::new(report, input, &profile))
}

render_via!(Contention, |r| LockJson {
    schema: LOCK_SCHEMA,
    input: &r.input,
    report: &r.report,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_record_flags_are_system_wide_without_a_command_or_with_states() {
        let locks = LOCK_EVENTS.join(",");
        let with_states = format!("{locks},{}", STATE_EVENTS.join(","));
        assert_eq!(
            record_flags(false, false, true),
            ["-c", "1", "-g", "-e", &locks]
        );
        assert_eq!(
            record_flags(false, false, false),
            ["-c", "1", "-g", "-e", &locks, "-a"]
        );
        assert_eq!(
            record_flags(true, false, true),
            ["-c", "1", "-g", "-e", &locks, "-a"]
        );
        assert_eq!(
            record_flags(false, true, true),
            ["-c", "1", "-g", "-e", &with_states, "-a"]
        );
    }
}
