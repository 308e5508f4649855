//! `culprit lock`: lock contention, with perf's verbs (`perf lock record`, `perf lock
//! contention`): kernel locks from `lock:contention_begin/end` with call chains, and user
//! locks (pthread mutexes, condition variables) from futex waits with user stacks
//! (`culprit_analysis::lock`; docs/wall-clock.md).

use std::process::ExitCode;

use culprit_analysis::lock::{self, LockJson, LockOptions, LOCK_SCHEMA};
use culprit_symbols::ReadPlan;

use crate::args::{Format, InputArgs, OutputArgs};
use crate::cmd::record;

/// The tracepoints `culprit lock record` records.
pub const LOCK_EVENTS: &[&str] = &[
    "lock:contention_begin",
    "lock:contention_end",
    "syscalls:sys_enter_futex",
    "syscalls:sys_exit_futex",
];

/// Arguments of `culprit lock`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Lock contention (perf lock): kernel locks and futex waits, with call sites and stacks",
    after_help = crate::help::layout("EXAMPLES:\n  culprit lock record -- ./prog       kernel lock contention and futex waits of ./prog (-g)\n  culprit lock contention             per call site: contended, total, max, avg wait\n  culprit lock record --states -- ./prog\n                                      also the scheduler events: culprit html draws thread states\n\nThe kernel table reads `perf lock record` files too.")
)]
pub struct LockArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LockCommand,
}

/// The `culprit lock` verbs.
#[derive(clap::Subcommand, Debug)]
pub enum LockCommand {
    /// Record lock contention and futex waits with call chains.
    Record(LockRecordArgs),
    /// Per call site (kernel locks) and per futex (user locks): waits and their times.
    Contention(ContentionArgs),
}

/// Arguments of `culprit lock record`.
#[derive(clap::Args, Debug)]
#[command(trailing_var_arg = true)]
pub struct LockRecordArgs {
    /// `-o FILE`, `-m PAGES`, `-q`.
    #[command(flatten)]
    pub preset: record::PresetArgs,
    /// The whole system (the default without a command).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Also record the scheduler's switches and wake-ups (system-wide: implies -a), so that
    /// `culprit html` draws each thread's states, its lock waits among them, and `culprit
    /// sched timehist` reads the file.
    #[arg(long)]
    pub states: bool,
    /// The command to run while recording.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Arguments of `culprit lock contention`.
#[derive(clap::Args, Debug)]
pub struct ContentionArgs {
    /// The input file and where its symbols are found.
    #[command(flatten)]
    pub input: InputArgs,
    /// Kernel call-chain frames to skip (perf's --stack-skip).
    #[arg(long = "stack-skip", value_name = "N", default_value_t = 3)]
    pub stack_skip: usize,
    /// Waiter stacks shown per futex.
    #[arg(long = "stacks", value_name = "N", default_value_t = 3)]
    pub stacks: usize,
    /// `--format text|json`, `-o FILE`.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `culprit lock`.
pub fn run(args: LockArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LockCommand::Record(a) => run_record(a),
        LockCommand::Contention(a) => run_contention(a),
    }
}

/// The scheduler events `culprit lock record --states` adds: a thread's states need its
/// switches in and out, which only a system-wide recording has (a task's switch-in is
/// recorded in the context of the task it replaces).
pub const STATE_EVENTS: &[&str] = &["sched:sched_switch", "sched:sched_waking"];

/// `culprit record -c 1 -g -e <LOCK_EVENTS>[,<STATE_EVENTS>] [-a] -m PAGES -o FILE [-- CMD]`.
fn run_record(a: LockRecordArgs) -> anyhow::Result<ExitCode> {
    let mut events = LOCK_EVENTS.to_vec();
    if a.states {
        events.extend(STATE_EVENTS);
    }
    let events = events.join(",");
    let mut flags = vec!["-c", "1", "-g", "-e", &events];
    if a.all_cpus || a.states || a.command.is_empty() {
        flags.push("-a");
    }
    record::run_preset(&flags, &a.preset, &a.command)
}

fn run_contention(a: ContentionArgs) -> anyhow::Result<ExitCode> {
    a.output
        .require("lock contention", &[Format::Text, Format::Json])?;
    let input = a.input.open();
    let mut sym = input.symbolizer();
    let options = LockOptions {
        stack_skip: a.stack_skip,
        lock_text: sym.kernel_lock_text(),
        top_stacks: a.stacks,
    };
    // Streamed: only per-lock state is kept, so an endless stdin stays bounded.
    let mut contention = lock::LockContention::new(&mut sym, &options);
    let profile = input.for_each(
        &ReadPlan::default(),
        |_, _| {},
        |profile, sample| contention.sample(profile, sample),
    )?;
    let report = contention.finish(&profile)?;
    let path = input.path().display().to_string();
    a.output.render(&LockJson {
        schema: LOCK_SCHEMA,
        input: &path,
        report: &report,
    })?;
    if let Some(stop) = &profile.stopped {
        let outcome = "the report covers what was read before it";
        return Ok(culprit_verbs::stopped::report(
            &path,
            &stop.describe(),
            outcome,
        ));
    }
    Ok(ExitCode::SUCCESS)
}
